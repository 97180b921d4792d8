"""How many sessions one client address may hold at once, and open per minute.

A client that opens sessions in a loop (a bug or an attack) is refused with
HTTP 429 at the WebSocket handshake or the WebRTC offer, before it claims a
pipeline unit, so it cannot keep every other client out.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict, deque

WINDOW_S = 60.0
MAX_TRACKED = 10_000  # addresses remembered before the quiet ones are forgotten


class ClientAdmission:
    def __init__(self, max_concurrent: int, max_per_minute: int) -> None:
        self.max_concurrent = max_concurrent
        self.max_per_minute = max_per_minute
        self._open: Counter[str] = Counter()
        self._recent: defaultdict[str, deque[float]] = defaultdict(deque)

    def admit(self, address: str) -> str | None:
        """Count a new session of ``address``; or why it is refused (nothing is counted then)."""
        now = time.monotonic()
        if len(self._recent) > MAX_TRACKED:
            self._forget_before(now - WINDOW_S)
        recent = self._recent[address]
        while recent and now - recent[0] > WINDOW_S:
            recent.popleft()
        if self.max_concurrent and self._open[address] >= self.max_concurrent:
            return f"this address already has {self._open[address]} sessions open (the limit)"
        if self.max_per_minute and len(recent) >= self.max_per_minute:
            return f"this address opened {len(recent)} sessions in the last minute (the limit)"
        self._open[address] += 1
        if self.max_per_minute:
            recent.append(now)
        return None

    def leave(self, address: str) -> None:
        self._open[address] -= 1
        if self._open[address] <= 0:
            del self._open[address]
            if not self._recent[address]:
                del self._recent[address]

    def _forget_before(self, cutoff: float) -> None:
        for address in [a for a, times in self._recent.items() if not times or times[-1] < cutoff]:
            if not self._open[address]:
                del self._open[address]
                del self._recent[address]
