"""The replay journal: a session's recent server events, kept for a client that reconnects.

Every event a session emits is appended under its ``server_event_seq``; a
client that resumes asks for everything after the last seq it received.
The journal answers either with every one of those events, in order, or
says that some are gone (a gap), so the caller can tell the client to
resync: it never skips an event silently and never returns one twice.

It is bounded by bytes and by age, and trimmed by the client's acks
(``session.event_ack``). :class:`ReplayJournal` is the small interface the
session relies on, so that a store shared by several servers can back it
later; :class:`MemoryJournal` keeps it in this process.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from speech_to_speech.realtime.connection.frames import Frame

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_TTL_S = 120.0


@dataclass(frozen=True)
class Replay:
    """What a journal still holds after a cursor."""

    frames: tuple[Frame, ...]
    complete: bool  # False: some events after the cursor are no longer held (a gap)


class ReplayJournal(Protocol):
    def append(self, seq: int, frame: Frame) -> None:
        """Record ``frame`` under ``seq`` (strictly greater than every seq appended before)."""

    def after(self, seq: int) -> Replay:
        """The frames with a seq above ``seq``, in order, and whether that is all of them."""

    def ack(self, seq: int) -> None:
        """The client has every event up to ``seq``: they need not be kept."""

    @property
    def held_bytes(self) -> int:
        """Bytes of the frames held now."""

    def close(self) -> None:
        """The session ended: drop everything."""


@dataclass(frozen=True)
class _Entry:
    seq: int
    frame: Frame
    at: float


class MemoryJournal:
    """A :class:`ReplayJournal` in memory, at most ``max_bytes`` and ``ttl_s`` seconds old."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, ttl_s: float = DEFAULT_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self._clock = clock
        self._entries: deque[_Entry] = deque()
        self._bytes = 0
        self._last = 0  # the highest seq appended
        self._floor = 0  # the highest seq no longer held: every seq above it up to _last is held

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, seq: int, frame: Frame) -> None:
        if seq <= self._last:
            raise ValueError(f"server_event_seq {seq} after {self._last}: seqs must increase")
        self._last = seq
        self._entries.append(_Entry(seq, frame, self._clock()))
        self._bytes += frame.size
        self._trim()

    def restore(self, frames: Iterable[Frame], floor: int) -> None:
        """Start from another replica's journal: ``frames`` (in seq order), none lost above ``floor``."""
        for frame in frames:
            if frame.seq is not None and frame.seq > self._last:
                self.append(frame.seq, frame)
        self._floor = max(self._floor, floor)
        self._last = max(self._last, floor)

    def after(self, seq: int) -> Replay:
        self._trim()
        frames = tuple(entry.frame for entry in self._entries if entry.seq > seq)
        return Replay(frames, complete=seq >= self._floor)

    def ack(self, seq: int) -> None:
        while self._entries and self._entries[0].seq <= seq:
            self._drop_oldest()

    def close(self) -> None:
        self._entries.clear()
        self._bytes = 0
        self._floor = self._last

    def _trim(self) -> None:
        oldest = self._clock() - self.ttl_s
        while self._entries and (self._bytes > self.max_bytes or self._entries[0].at < oldest):
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        entry = self._entries.popleft()
        self._bytes -= entry.frame.size
        self._floor = entry.seq
