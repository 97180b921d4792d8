"""``bench resume``: sessions whose connection is cut mid-answer, resumed by ``RealtimeClient``.

Against one child server with fast scripted handlers, reached through a
relay on loopback, each session asks one question and the relay aborts both
TCP connections (no close frame) right after it passed the client a seeded
random number of the answer's events: the server has sent the rest, which
never arrives. ``RealtimeClient`` reconnects with its backoff (its default
unless ``--reconnect-delay-ms``) and resumes. Per session: whether the resume
succeeded, the time from the cut to ``ConnectionResumed`` and to the first
event after it, how many events followed the resume up to ``response.done``
(the scripted answer is emitted within milliseconds, so by the time the
client is back all of them come out of the replay journal), the duplicates
the consumer saw (the client must drop them), and whether the answer's
events, audio and transcript equal those of an uncut reference session.

The server's journal is not on ``/metrics``: what the bench reports is the
bytes of the journaled events each session received (what its journal holds
with no ``session.event_ack`` trimming it, below ``replay_journal_max_bytes``)
and the bytes replayed per resume, both as the compact JSON the client read.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from speech_to_speech.bench.emit_rate import measure_emit
from speech_to_speech.bench.stats import summarize
from speech_to_speech.bench.target import Target
from speech_to_speech.client.events import ConnectionResumed, RealtimeEvent
from speech_to_speech.client.realtime_client import RealtimeClient
from speech_to_speech.client.reconnect import ReconnectPolicy
from speech_to_speech.testing.cutting_relay import CuttingRelay

QUESTION = "Tell me about Paris."
# Long enough to be cut anywhere: a dozen clauses, each its own stretch of scripted audio.
REPLY = ("Paris is the capital of France, and its largest city. It stands on the Seine, in the north of the "
         "country. It has been a centre of art, science and trade for centuries. The Louvre holds the Mona "
         "Lisa, and the Eiffel Tower was built for a world fair. About two million people live in the city "
         "itself, and more than twelve million in the region around it. Its cafés, parks and markets are "
         "known all over the world, and so is its food.")


@dataclass(frozen=True)
class ResumeConfig:
    sessions: int = 30
    seed: int = 1
    timeout_s: float = 30.0
    emit_events: int = 20000  # per kind, for the in-process emit figure
    reconnect: dict[str, Any] = field(default_factory=lambda: asdict(ReconnectPolicy()))


@dataclass(frozen=True)
class Answer:
    """One question's answer as the consumer saw it: the journaled events from the question to response.done."""

    types: tuple[str, ...]
    audio_bytes: bytes
    transcript: str
    journal_bytes: int  # compact JSON of every journaled event the session received


def _answer(events: list[RealtimeEvent], journal_bytes: int) -> Answer:
    return Answer(tuple(e.type for e in events), b"".join(e.audio for e in events),
                  "".join(e.text or "" for e in events if e.type == "response.output_audio_transcript.delta"),
                  journal_bytes)


def _size(event: RealtimeEvent) -> int:
    return len(json.dumps(dict(event.raw), separators=(",", ":"), ensure_ascii=False).encode())


async def _ask(client: RealtimeClient) -> None:
    await client.send({"type": "conversation.item.create", "item": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": QUESTION}]}})
    await client.create_response()


async def _session(relay: CuttingRelay, config: ResumeConfig,
                   cut: tuple[str, int] | None) -> tuple[Answer, dict[str, Any]]:
    """One session: ask, let the relay cut after the ``cut`` event (type, nth; None: no cut), read to response.done."""
    client = RealtimeClient(relay.ws_url, reconnect=ReconnectPolicy(**config.reconnect), heartbeat_interval_s=None)
    subscription = client.events()
    seen: set[int] = set()
    answer: list[RealtimeEvent] = []
    sample: dict[str, Any] = {"cut_after": None if cut is None else f"{cut[0]} #{cut[1]}", "duplicates": 0}
    journal_bytes = replayed_bytes = 0
    resumed = False
    async with client:
        cuts = relay.cuts
        if cut is not None:
            relay.cut_after(*cut)
        await _ask(client)
        async with asyncio.timeout(config.timeout_s):
            async for event in subscription:
                if isinstance(event, ConnectionResumed):
                    resumed = True
                    sample["cut_to_resumed_ms"] = _since_cut(relay, event.received_at)
                    sample["events_replayed"] = 0
                    continue
                if event.server_event_seq is None:
                    continue
                if event.server_event_seq in seen:
                    sample["duplicates"] += 1
                    continue
                seen.add(event.server_event_seq)
                journal_bytes += _size(event)
                if resumed:
                    if sample["events_replayed"] == 0:
                        sample["cut_to_first_replayed_ms"] = _since_cut(relay, event.received_at)
                    sample["events_replayed"] += 1
                    replayed_bytes += _size(event)
                if event.type != "session.created":
                    answer.append(event)
                if event.type == "response.done":
                    break
        sample.update(cuts=relay.cuts - cuts, resumes=client.resumes,
                      client_dropped_duplicates=client.duplicates_dropped)
    if resumed:
        sample["replayed_bytes"] = replayed_bytes
    sample["journal_bytes"] = journal_bytes
    return _answer(answer, journal_bytes), sample


def _since_cut(relay: CuttingRelay, at: float) -> float | None:
    return None if relay.cut_time is None else round((at - relay.cut_time) * 1000, 2)


def _cut_point(types: tuple[str, ...], after: int) -> tuple[str, int]:
    """The relay's rule for "after the ``after``-th event from response.created on": (type, its nth occurrence)."""
    index = types.index("response.created") + after - 1
    return types[index], types[: index + 1].count(types[index])


def _compare(reference: Answer, got: Answer) -> dict[str, Any]:
    """What the cut session's answer lacks (or has extra) against the reference."""
    lost = sum(max(0, reference.types.count(t) - got.types.count(t)) for t in set(reference.types))
    extra = sum(max(0, got.types.count(t) - reference.types.count(t)) for t in set(got.types))
    return {"events_lost": lost, "events_extra": extra, "events_in_order": got.types == reference.types,
            "audio_bytes_lost": len(reference.audio_bytes) - len(got.audio_bytes),
            "audio_equal": got.audio_bytes == reference.audio_bytes,
            "transcript_equal": got.transcript == reference.transcript}


async def run(target: Target, config: ResumeConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    rng = random.Random(config.seed)
    with CuttingRelay(target.http_url.replace("http://", "ws://", 1)).running() as relay:
        started = time.monotonic()
        reference, _ = await _session(relay, config, None)
        reference_ms = round((time.monotonic() - started) * 1000, 1)
        answer_events = len(reference.types) - reference.types.index("response.created")
        samples: list[dict[str, Any]] = []
        for index in range(config.sessions):
            after = rng.randrange(1, answer_events)  # after response.created, before response.done
            cut = _cut_point(reference.types, after)
            try:
                got, sample = await _session(relay, config, cut)
                sample.update(_compare(reference, got), resumed=sample["resumes"] == 1 and sample["cuts"] == 1)
            except Exception as error:  # noqa: BLE001 - a failed session is a figure, not the end of the run
                sample = {"resumed": False, "failed": f"{type(error).__name__}: {error}"}
            samples.append({"session": index, "cut_after_answer_events": after, **sample})
            await target.wait_idle()
    emit = measure_emit(config.emit_events)
    return _summary(samples, reference, reference_ms, answer_events, emit), samples, asdict(config)


def _summary(samples: list[dict[str, Any]], reference: Answer, reference_ms: float, answer_events: int,
             emit: dict[str, Any]) -> dict[str, Any]:
    def total(key: str) -> int:
        return sum(int(s.get(key) or 0) for s in samples)

    replayed = summarize(s.get("events_replayed") for s in samples)
    return {
        "sessions": len(samples),
        "resumes_attempted": len(samples),
        "resumes_succeeded": sum(1 for s in samples if s.get("resumed")),
        "failed": sum(1 for s in samples if "failed" in s),
        "cut_to_resumed_ms": summarize(s.get("cut_to_resumed_ms") for s in samples),
        "cut_to_first_replayed_ms": summarize(s.get("cut_to_first_replayed_ms") for s in samples),
        "events_replayed": {k: replayed[k] for k in ("n", "min", "mean", "max")},
        "duplicates_seen_by_consumer": total("duplicates"),
        "duplicates_dropped_by_client": total("client_dropped_duplicates"),
        "events_lost": total("events_lost"),
        "events_extra": total("events_extra"),
        "audio_bytes_lost": total("audio_bytes_lost"),
        "answers_equal_to_reference": sum(1 for s in samples if s.get("events_in_order") and s.get("audio_equal")
                                          and s.get("transcript_equal")),
        "reference": {"answer_events": answer_events, "audio_bytes": len(reference.audio_bytes),
                      "session_ms": reference_ms, "journal_bytes": reference.journal_bytes},
        "journal_bytes_per_session": {k: v for k, v in summarize(s.get("journal_bytes") for s in samples).items()
                                      if k in ("n", "min", "mean", "max")},
        "replayed_bytes_per_resume": {k: v for k, v in summarize(s.get("replayed_bytes") for s in samples).items()
                                      if k in ("n", "min", "mean", "max")},
        "journal_on_metrics": False,
        "emit": emit,
    }
