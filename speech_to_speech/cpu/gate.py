"""The one place that decides what runs on the CPU: a turn's critical path before long decodes.

A 2-core machine serving two sessions has more work than cores at the worst
moment: one session's user stopped speaking (its STT pass, its prompt and
the first words of its reply are all that stand between them and an answer)
while the other session's reply is still decoding sentences its voice will
not speak for seconds. So the stages say which kind of work they do:

- ``urgent``: what a waiting user's first audio depends on. It registers the
  threads it runs on; urgent jobs share the free CPUs between them.
- background: a reply past its first words. Between its tokens it asks
  :meth:`CpuGate.background_threads`, which waits (a bounded time, so its own
  voice never starves) while urgent work holds every free CPU, and then
  says how many threads are left for it.
- idle: work that may wait as long as it takes (the call writer reading the
  tools ahead, llm/idle_read.py). It runs only while :attr:`CpuGate.idle`,
  so background work it must not slow (an interim STT pass, the main model's
  own read ahead) says it runs with :meth:`CpuGate.background`; a reply past
  its first words, whose voice sets its pace, does not.

The free CPUs are what other processes leave (:mod:`speech_to_speech.cpu.share`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# A background decode waits at most this long per token: ~10 tokens of a reply still ahead of its voice
# (speech takes ~250 ms a word), and longer than the first words of another session's reply take.
MAX_WAIT_S = 0.4


class CpuGate:
    """Counts the threads urgent work holds; background work gets what is left, or waits for it."""

    def __init__(self, free_cpus: Callable[[], int], max_wait_s: float = MAX_WAIT_S) -> None:
        self._free_cpus = free_cpus
        self._max_wait_s = max_wait_s
        self._urgent_jobs = 0
        self._urgent_threads = 0
        self._background_jobs = 0
        self._changed = threading.Condition()

    @contextmanager
    def urgent(self, threads: int = 1) -> Iterator[None]:
        """Mark urgent work on up to ``threads`` threads while the block runs."""
        with self._changed:
            self._urgent_jobs += 1
            self._urgent_threads += threads
        try:
            yield
        finally:
            with self._changed:
                self._urgent_jobs -= 1
                self._urgent_threads -= threads
                self._changed.notify_all()

    @contextmanager
    def background(self) -> Iterator[None]:
        """Mark background work running while the block runs: it claims no threads (it takes what
        :meth:`background_threads` leaves), but idle work waits for it to end."""
        with self._changed:
            self._background_jobs += 1
        try:
            yield
        finally:
            with self._changed:
                self._background_jobs -= 1
                self._changed.notify_all()

    def urgent_threads(self, wanted: int) -> int:
        """How many threads an urgent job (already inside :meth:`urgent`) may run on: its share of the free CPUs."""
        with self._changed:
            jobs = max(1, self._urgent_jobs)
        return max(1, min(wanted, self._free_cpus() // jobs))

    def background_threads(self, wanted: int) -> int:
        """Threads for a background step: what urgent work leaves of the free CPUs, after waiting for some
        to be left (at most ``max_wait_s``; then one thread, since a reply must go on)."""
        with self._changed:
            self._changed.wait_for(lambda: self._left() > 0, timeout=self._max_wait_s)
            return max(1, min(wanted, self._left()))

    def spare_threads(self, wanted: int) -> int:
        """Threads left now beside urgent work, up to ``wanted``; 0 when it holds every free CPU (no wait:
        for work that may as well not run, such as reading a prompt ahead)."""
        with self._changed:
            return max(0, min(wanted, self._left()))

    def _left(self) -> int:
        return self._free_cpus() - self._urgent_threads

    @property
    def busy(self) -> bool:
        """Urgent work is running."""
        with self._changed:
            return self._urgent_jobs > 0

    @property
    def idle(self) -> bool:
        """No urgent work, and no background work marked with :meth:`background`, is running."""
        with self._changed:
            return self._urgent_jobs == 0 and self._background_jobs == 0


_shared: CpuGate | None = None
_shared_lock = threading.Lock()


def shared() -> CpuGate:
    """The process's one gate, over the process's one CPU share sampler."""
    global _shared
    with _shared_lock:
        if _shared is None:
            from speech_to_speech.cpu import share

            _shared = CpuGate(share.shared().free_cpus)
        return _shared
