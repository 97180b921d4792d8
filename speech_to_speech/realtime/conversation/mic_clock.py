"""How far the session's microphone audio waits behind the wall clock before the echo canceller gets it.

The canceller matches each microphone frame with one reference frame, so
the reference of a reply is placed where the microphone is when the reply is
sent. That is where the speaker starts playing it only if the microphone
audio that came in meanwhile has been taken: when the event loop was held
(a slow machine, a long computation), the microphone's audio of that time
waits in the socket while the reply's audio, ready by then, goes out first.
Live on a 2-core EPYC without AVX-512 the microphone was 400-530 ms behind
when an answer went on after a stall; placed that much early, the reference
missed its echo, and the answer's words came through as the user's.

A microphone streams in real time, so the audio that should have come in by
now is the time since it began at its rate. What has come in lags that by a
steady amount (chunking, the network): the least lag over the last seconds.
Beyond it, the lag is audio still waiting. A client that stops sending (push
to talk) lags by seconds, and its reply is placed as before.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

BASELINE_S = 5.0  # the steady lag is the least over this long
MIN_BACKLOG_MS = 40  # less than this is jitter (the canceller's restart check finds 30 ms)
MAX_BACKLOG_MS = 1000  # more than this is a client that stopped sending, not audio waiting


class MicClock:
    """One session's microphone: the audio taken so far against the time since it began."""

    def __init__(self, rate: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate = rate
        self._clock = clock
        self._start: float | None = None
        self._taken = 0  # samples taken
        self._lags: deque[tuple[float, float]] = deque()  # (when, samples behind the wall clock) after each take

    @property
    def taken(self) -> int:
        """The microphone's samples taken so far."""
        return self._taken

    def took(self, samples: int) -> None:
        """``samples`` more of the microphone's audio were taken (after its first chunk: the clock's start)."""
        now = self._clock()
        if self._start is None:
            self._start = now
        self._taken += samples
        lag = self._behind(now)
        while self._lags and (self._lags[-1][1] >= lag or self._lags[0][0] < now - BASELINE_S):
            # (the least of a window: a later, smaller lag makes the ones before it moot)
            if self._lags[-1][1] >= lag:
                self._lags.pop()
            else:
                self._lags.popleft()
        self._lags.append((now, lag))

    def waiting(self) -> int:
        """The microphone's samples that should have come in by now and wait still (0 if within jitter)."""
        if self._start is None or not self._lags:
            return 0
        waiting = self._behind(self._clock()) - self._lags[0][1]
        if not MIN_BACKLOG_MS * self._rate / 1000 <= waiting <= MAX_BACKLOG_MS * self._rate / 1000:
            return 0
        return int(waiting)

    def _behind(self, now: float) -> float:
        assert self._start is not None
        return (now - self._start) * self._rate - self._taken
