"""What waits for a session's client: one bounded queue of serialised server events.

It holds :class:`Frame` objects (the events as emitted, serialised once),
counted in events and in bytes of compact JSON (base64 audio included), per
session. When a slow client lets more pile up than the limits allow, the
queue overflows once: audio deltas still waiting are dropped, ordinary
events are refused from then on, and ``on_overflow`` is told, so the owner
can fail the active response and close only this session. The error and
the response's ending that follow get a small reserve of their own; the
session's one ``session.closed`` has a slot of its own beside it, so a full
reserve cannot swallow the reason the session ends. A closure whose details
would not fit that slot goes out compacted (its reason says so).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable

from speech_to_speech.realtime.connection.frames import Frame
from speech_to_speech.realtime.connection.transport import dumps

DEFAULT_MAX_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_EVENTS = 512
# After an overflow: room for the error and the response ending that report it.
RESERVE_BYTES = 64 * 1024
RESERVE_EVENTS = 8
_AFTER_OVERFLOW = frozenset({"error", "response.done"})
_DROPPED_ON_OVERFLOW = frozenset({"response.output_audio.delta"})
CLOSURE = "session.closed"
CLOSURE_MAX_BYTES = 4 * 1024
COMPACTED_CLOSE_REASON = "close_details_exceed_output_limit"


def compacted_closure(frame: Frame) -> Frame:
    """A ``session.closed`` too large for its slot: its identity kept, its reason saying why its details went."""
    event = json.loads(frame.text)
    kept = {key: event[key] for key in ("event_id", "type", "session_id") if key in event}
    seq = {"server_event_seq": frame.seq} if frame.seq is not None else {}
    return Frame(dumps({**kept, "reason": COMPACTED_CLOSE_REASON, "details": {}, **seq}), frame.type, frame.seq)


class OutboundQueue:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, max_events: int = DEFAULT_MAX_EVENTS,
                 on_overflow: Callable[[], None] | None = None) -> None:
        self.max_bytes = max_bytes
        self.max_events = max_events
        self.on_overflow = on_overflow
        self.overflowed = False
        self.closure_queued = False
        self.pending_bytes = 0
        self._items: deque[Frame] = deque()
        self._ready = asyncio.Event()
        self._unfinished = 0  # taken by get() and not yet task_done(): being sent
        self._idle = asyncio.Event()
        self._idle.set()

    def __len__(self) -> int:
        return len(self._items)

    def put(self, frame: Frame) -> None:
        if frame.type == CLOSURE:
            self._put_closure(frame)
            return
        if self.overflowed:
            if frame.type in _AFTER_OVERFLOW and self._fits(frame.size, RESERVE_BYTES, RESERVE_EVENTS):
                self._append(frame)
            return
        if not self._fits(frame.size, 0, 0):
            self._overflow()
            self.put(frame)
            return
        self._append(frame)

    def _put_closure(self, frame: Frame) -> None:
        if self.closure_queued:
            return  # a session closes once
        self.closure_queued = True
        self._append(compacted_closure(frame) if frame.size > CLOSURE_MAX_BYTES else frame)

    def _fits(self, size: int, extra_bytes: int, extra_events: int) -> bool:
        return (len(self._items) + 1 <= self.max_events + extra_events
                and self.pending_bytes + size <= self.max_bytes + extra_bytes)

    def _append(self, frame: Frame) -> None:
        self._items.append(frame)
        self.pending_bytes += frame.size
        self._ready.set()
        self._idle.clear()

    def _overflow(self) -> None:
        self.overflowed = True
        kept = [frame for frame in self._items if frame.type not in _DROPPED_ON_OVERFLOW]
        self._items = deque(kept)
        self.pending_bytes = sum(frame.size for frame in kept)
        if self.on_overflow is not None:
            self.on_overflow()

    async def get(self) -> Frame:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        frame = self._items.popleft()
        self.pending_bytes -= frame.size
        self._unfinished += 1
        return frame

    def task_done(self) -> None:
        """The event last taken by :meth:`get` went out."""
        self._unfinished -= 1
        if not self._items and not self._unfinished:
            self._idle.set()

    async def join(self) -> None:
        """Wait until every queued event went out."""
        await self._idle.wait()
