"""Which ``server_event_seq`` values a client already has: the duplicate test for replayed events.

An event is a duplicate when its seq was seen, not when it is below the
newest one: after a journal gap the server sends ``session.resync_required``
(journaled, so with a fresh, high seq) before the older events it still
holds. Memory stays small: every seq up to ``floor`` counts as seen, and only
the seqs above it are kept one by one; the floor rises over each contiguous
run, and over a gap once the server said the gap is for good.
"""

from __future__ import annotations

RESYNC_REQUIRED = "session.resync_required"


class ReceivedSeqs:
    def __init__(self) -> None:
        self.floor = 0  # every seq <= floor was received, or is gone for good: the resume cursor
        self.highest = 0
        self._above: set[int] = set()
        self._gap_announced = False

    def accept(self, seq: int, event_type: str) -> bool:
        """Record ``seq``; False when it was received before (drop the event)."""
        if seq <= self.floor or seq in self._above:
            return False
        if self._gap_announced and event_type != RESYNC_REQUIRED:
            # The first event after a resync is the oldest the server still holds: nothing below it will come.
            self._gap_announced = False
            self.floor = max(self.floor, seq - 1)
        if event_type == RESYNC_REQUIRED:
            self._gap_announced = True
        self._above.add(seq)
        self.highest = max(self.highest, seq)
        while self.floor + 1 in self._above:
            self.floor += 1
            self._above.discard(self.floor)
        return True
