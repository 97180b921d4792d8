"""What the one exit costs: events per second through stamp, serialise and journal, in this process.

Every server event leaves a session through ``LiveSession.emit``: it gets its
``event_id`` and ``server_event_seq``, becomes compact JSON once (a
:class:`~speech_to_speech.realtime.connection.frames.Frame`) and is appended to the
replay journal. This times exactly those steps (``to_frame`` and
``MemoryJournal.append`` at the default bounds, so the journal trims as a
long session's would) on the two events a spoken answer is made of: an audio
delta of 100 ms of 24 kHz PCM16, and a transcript delta. Queueing for the
socket and the Prometheus counter are left out: they are the same for any
design of the exit.
"""

from __future__ import annotations

import base64
import os
import time
from typing import Any

from speech_to_speech.realtime.connection.frames import to_frame
from speech_to_speech.realtime.sessions.journal import MemoryJournal

AUDIO_100MS = base64.b64encode(os.urandom(24000 * 2 // 10)).decode()  # 4800 bytes of PCM16 mono at 24 kHz


def typical_events() -> dict[str, dict[str, Any]]:
    """The two events an answer is mostly made of, as a session builds them (no id, no seq yet)."""
    where = {"response_id": "resp_0123456789abcdef", "item_id": "item_0123456789abcdef",
             "output_index": 0, "content_index": 0}
    return {
        "audio_delta_100ms": {"type": "response.output_audio.delta", **where, "delta": AUDIO_100MS},
        "transcript_delta": {"type": "response.output_audio_transcript.delta", **where, "delta": "capital "},
    }


def _rates(count: int, seconds: float, size: int) -> dict[str, Any]:
    return {"events": count, "events_per_s": round(count / seconds), "us_per_event": round(seconds / count * 1e6, 2),
            "json_mb_per_s": round(size / seconds / 1e6, 1), "bytes_per_event": size // count}


def measure_emit(count: int = 20000) -> dict[str, Any]:
    """Events/s and MB/s (of JSON) through stamp + serialise + journal, per kind of event."""
    figures: dict[str, Any] = {}
    for name, event in typical_events().items():
        journal = MemoryJournal()
        started = time.perf_counter()
        size = 0
        for seq in range(1, count + 1):
            frame = to_frame(event, seq)
            journal.append(seq, frame)
            size += frame.size
        figures[name] = _rates(count, time.perf_counter() - started, size)
    return figures


async def measure_store_emit(url: str, count: int = 20000, batch: int = 500) -> dict[str, Any]:
    """The same exit with the journal mirrored to the Redis at ``url`` (``--session_store``), per kind:

    ``session_path``: what the session pays (stamp, serialise, memory journal, queue the write);
    ``redis``: the writer's drain into Redis, timed from the first event of a batch until the
    batch is written (``batch`` at a time, below the writer's queue bound, so nothing is dropped);
    ``redis_bytes_per_event``: Redis's memory growth per event, over the first ``batch``.
    """
    from speech_to_speech.realtime.conversation.history import ConversationState
    from speech_to_speech.realtime.sessions.store.base import Snapshot
    from speech_to_speech.realtime.sessions.store.redis_store import RedisStore

    writes: dict[str, int] = {}
    store = RedisStore(url, on_write=lambda outcome, n: writes.__setitem__(outcome, writes.get(outcome, 0) + n))
    figures: dict[str, Any] = {}
    try:
        for name, event in typical_events().items():
            link = store.link(f"sess_bench_{name}", MemoryJournal(), lambda: Snapshot({}, ConversationState(()), None))
            path_s = total_s = 0.0
            size = 0
            before = (await store.redis.info("memory"))["used_memory"]
            grown = 0
            for start in range(1, count + 1, batch):
                began = time.perf_counter()
                for seq in range(start, min(start + batch, count + 1)):
                    frame = to_frame(event, seq)
                    link.journal.append(seq, frame)
                    size += frame.size
                path_s += time.perf_counter() - began
                await store.writer.flush(30.0)
                total_s += time.perf_counter() - began
                if start == 1:
                    grown = (await store.redis.info("memory"))["used_memory"] - before
            figures[name] = {"session_path": _rates(count, path_s, size), "redis": _rates(count, total_s, size),
                             "redis_bytes_per_event": round(grown / min(batch, count)),
                             "writes": dict(writes)}
            writes.clear()
            await link.finish(keep=False)
    finally:
        await store.close()
    return figures
