"""OutboundQueue: what waits for a slow client is bounded, and an overflow keeps what must still be said."""

from __future__ import annotations

import asyncio
import json

from speech_to_speech.realtime.connection.frames import Frame, to_frame
from speech_to_speech.realtime.connection.outbound import (
    CLOSURE_MAX_BYTES,
    COMPACTED_CLOSE_REASON,
    RESERVE_EVENTS,
    OutboundQueue,
)


def _event(kind: str, size: int = 10) -> Frame:
    return to_frame({"type": kind, "pad": "x" * size})


async def _drain(queue: OutboundQueue) -> list[str]:
    out = []
    while len(queue):
        out.append((await queue.get()).type)
        queue.task_done()
    return out


async def test_below_the_limits_everything_waits_in_order() -> None:
    overflows: list[bool] = []
    queue = OutboundQueue(max_bytes=10_000, max_events=10, on_overflow=lambda: overflows.append(True))
    for kind in ("a", "b", "response.output_audio.delta", "c"):
        queue.put(_event(kind))
    assert await _drain(queue) == ["a", "b", "response.output_audio.delta", "c"]
    assert not overflows and not queue.overflowed and queue.pending_bytes == 0


async def test_an_overflow_drops_queued_audio_and_refuses_ordinary_events() -> None:
    overflows: list[bool] = []
    queue = OutboundQueue(max_bytes=1_000_000, max_events=4, on_overflow=lambda: overflows.append(True))
    for kind in ("response.created", "response.output_audio.delta", "response.output_audio.delta", "text"):
        queue.put(_event(kind))
    queue.put(_event("response.output_audio.delta"))  # the fifth: over the limit
    assert overflows == [True] and queue.overflowed
    queue.put(_event("response.output_audio_transcript.delta"))  # ordinary: refused from now on
    queue.put(_event("error"))
    queue.put(_event("response.done"))
    assert await _drain(queue) == ["response.created", "text", "error", "response.done"]


async def test_the_reserve_after_an_overflow_is_bounded_too() -> None:
    queue = OutboundQueue(max_bytes=1_000, max_events=8)
    queue.put(_event("text", 2_000))  # alone over the byte limit
    assert queue.overflowed
    for _ in range(RESERVE_EVENTS + 5):
        queue.put(_event("error"))
    assert len(queue) <= 8 + RESERVE_EVENTS
    queue.put(_event("error", 200_000))  # over the byte reserve
    assert all(event == "error" for event in await _drain(queue))


async def test_join_waits_until_the_last_event_went_out() -> None:
    queue = OutboundQueue()
    queue.put(_event("a"))
    joined = asyncio.create_task(queue.join())
    await asyncio.sleep(0)
    assert not joined.done()
    await queue.get()
    await asyncio.sleep(0)
    assert not joined.done()  # taken, not yet sent
    queue.task_done()
    await asyncio.wait_for(joined, 1)


async def test_the_closure_has_a_slot_of_its_own_when_the_reserve_is_full() -> None:
    queue = OutboundQueue(max_bytes=1_000_000, max_events=2)
    for kind in ("a", "b", "c"):
        queue.put(_event(kind))
    assert queue.overflowed
    for _ in range(RESERVE_EVENTS + 3):
        queue.put(_event("error"))  # fills the reserve, and more are refused
    queue.put(to_frame({"type": "session.closed", "session_id": "sess_1", "reason": "output_limit_exceeded"}, 7))
    queue.put(to_frame({"type": "session.closed", "session_id": "sess_1", "reason": "again"}, 8))
    sent = await _drain(queue)
    assert sent.count("error") == RESERVE_EVENTS and sent[-1] == "session.closed" and sent.count("session.closed") == 1


async def test_a_closure_too_large_for_its_slot_is_compacted_keeping_its_identity() -> None:
    queue = OutboundQueue()
    big = to_frame({"type": "session.closed", "session_id": "sess_1", "reason": "output_limit_exceeded",
                    "details": {"note": "x" * (CLOSURE_MAX_BYTES + 1)}}, 42)
    queue.put(big)
    frame = await queue.get()
    event, original = json.loads(frame.text), json.loads(big.text)
    assert frame.size <= CLOSURE_MAX_BYTES
    assert event == {"event_id": original["event_id"], "type": "session.closed", "session_id": "sess_1",
                     "reason": COMPACTED_CLOSE_REASON, "details": {}, "server_event_seq": 42}
