"""``bench soak``: many sessions, some hostile, against one server; what it holds before and after.

N sessions (``concurrency`` at a time) of M spoken turns each, with scripted
handlers. A seeded random share of the turns is preceded by a malformed
event (each must be answered by an error naming its ``event_id``), and a
share of the sessions vanish mid-turn (a TCP abort after the response
started, or mid-audio). The server's threads, open file descriptors and RSS
are read from ``/proc`` after one warm-up session and again after the soak,
once every unit is idle, so a leak shows as growth. The server is a child
process, ended with SIGTERM at the end: its exit code is reported too.
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
import time
from dataclasses import asdict, dataclass
from typing import Any

from speech_to_speech.audio.rates import WIRE_RATE
from speech_to_speech.bench.target import Target
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import is_error_for
from speech_to_speech.testing.realtime_client import RealtimeTestClient

MALFORMED: tuple[dict[str, Any], ...] = (
    {"type": "session.frobnicate"},
    {"type": "input_audio_buffer.append", "audio": "not base64!"},
    {"type": "input_audio_buffer.append", "audio": base64.b64encode(b"odd").decode()},
    {"type": "session.update", "session": {"audio": {"input": {"turn_detection": {"type": "server_vad",
                                                                                  "threshold": 7}}}}},
    {"type": "conversation.item.retrieve", "item_id": "item_nope"},
    {"type": "response.create", "response": {"tools": [{"type": "function", "name": "t",
                                                        "parameters": {"type": "nonsense"}}]}},
)
DISCONNECT_POINTS = ("response.created", "response.output_audio.delta")


@dataclass(frozen=True)
class SoakConfig:
    sessions: int = 200
    turns: int = 3
    concurrency: int = 4
    disconnect_share: float = 0.1
    malformed_share: float = 0.3
    seed: int = 1
    settle_s: float = 2.0
    timeout_s: float = 30.0


@dataclass
class Tally:
    completed: int = 0
    disconnected: int = 0
    failed: int = 0
    turns_answered: int = 0
    malformed_sent: int = 0
    errors_returned: int = 0
    errors_missing: int = 0
    unexpected_errors: int = 0


def process_figures(pid: int) -> dict[str, float]:
    """Threads, open file descriptors and RSS (MiB) of process ``pid``, from /proc."""
    status: dict[str, str] = {}
    with open(f"/proc/{pid}/status") as lines:
        for line in lines:
            key, _, value = line.partition(":")
            status[key] = value.strip()
    return {
        "threads": int(status["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "rss_mib": round(int(status["VmRSS"].split()[0]) / 1024, 1),
    }


async def _session(target: Target, config: SoakConfig, rng: random.Random, tally: Tally) -> dict[str, Any]:
    vanish_at = rng.randrange(config.turns) if rng.random() < config.disconnect_share else None
    point = rng.choice(DISCONNECT_POINTS)
    sample: dict[str, Any] = {"turns": 0, "malformed": 0, "errors": 0}
    async with RealtimeTestClient.connect(target.ws_url, timeout=config.timeout_s) as client:
        await client.wait_for("session.created")
        for turn in range(config.turns):
            if rng.random() < config.malformed_share:
                event_id = await client.send_event(dict(rng.choice(MALFORMED)))
                tally.malformed_sent += 1
                sample["malformed"] += 1
                try:
                    await client.collect_until(is_error_for(event_id))
                    tally.errors_returned += 1
                    sample["errors"] += 1
                except TimeoutError:
                    tally.errors_missing += 1
            await client.append_audio(spoken_turn(WIRE_RATE), WIRE_RATE)
            if turn == vanish_at:
                await client.wait_for(point)
                client.abort()
                tally.disconnected += 1
                sample["vanished"] = point
                return sample
            done = await client.wait_for("response.done")
            if done["response"]["status"] == "completed":
                tally.turns_answered += 1
                sample["turns"] += 1
        tally.unexpected_errors += sum(
            1 for r in client.received if r.event.get("type") == "error"
            and not str(r.event["error"].get("event_id") or "").startswith("evt_client_"))
    tally.completed += 1
    return sample


async def run(target: Target, config: SoakConfig, pid: int) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                                      dict[str, Any]]:
    rng = random.Random(config.seed)
    tally = Tally()
    await target.wait_idle()
    await _session(target, SoakConfig(sessions=1, turns=1, malformed_share=0, disconnect_share=0), rng, Tally())
    await target.wait_idle()
    await asyncio.sleep(config.settle_s)
    before = process_figures(pid)
    gate = asyncio.Semaphore(config.concurrency)
    samples: list[dict[str, Any]] = []

    async def one(index: int) -> None:
        async with gate:
            session_rng = random.Random(rng.random())
            try:
                sample = await _session(target, config, session_rng, tally)
            except Exception as error:  # noqa: BLE001 - a failed session is a figure, not the end of the soak
                tally.failed += 1
                sample = {"failed": f"{type(error).__name__}: {error}"}
            samples.append({"session": index, **sample})

    started = time.monotonic()
    await asyncio.gather(*(one(index) for index in range(config.sessions)))
    elapsed = time.monotonic() - started
    await target.wait_idle(timeout=60)
    await asyncio.sleep(config.settle_s)
    after = process_figures(pid)
    pool = target.get("/v1/pool")
    summary = {
        "sessions": config.sessions,
        "sessions_served": tally.completed + tally.disconnected,
        **asdict(tally),
        "seconds": round(elapsed, 1),
        "server_before": before,
        "server_after": after,
        "pool_after": {"available": pool["available"], "size": pool["size"],
                       "rebuilds": sum(p["rebuilds"] for p in pool["pipelines"])},
    }
    return summary, sorted(samples, key=lambda s: s["session"]), asdict(config)
