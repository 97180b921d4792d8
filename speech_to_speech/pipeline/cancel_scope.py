"""The one cancellation primitive of a pipeline unit.

Handlers capture a generation when a response starts and check
``is_stale(gen)`` on every token or audio chunk; ``cancel()`` moves the
generation on so that every earlier one is stale at once. The send loop uses
the discard flag to drop output produced between ``cancel()`` and the
``ResponseDone`` sentinel of the cancelled generation.
"""

from __future__ import annotations

import queue
import threading
from typing import Any


class CancelScope:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._discarding = False
        self._discarded_generation: int | None = None

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def discarding(self) -> bool:
        return self._discarding

    def is_stale(self, generation: int) -> bool:
        return generation != self._generation

    def cancel(self) -> int:
        """Make every output of the current generation stale; returns the new one."""
        with self._lock:
            self._discarded_generation = self._generation
            self._generation += 1
            self._discarding = True
            return self._generation

    def response_done(self, generation: int) -> None:
        """A response's sentinel arrived; stop discarding if it closes the cancelled one.

        Sentinels of older, unrelated generations leave the flag alone.
        """
        with self._lock:
            if self._discarding and generation in (self._discarded_generation, self._generation):
                self._discarding = False
                self._discarded_generation = None

    def new_response(self) -> int:
        """An explicit response.create starts fresh output: stop discarding."""
        with self._lock:
            self._discarding = False
            self._discarded_generation = None
            return self._generation

    def reset(self) -> int:
        """Session claim/release: nothing in flight survives, nothing is being discarded."""
        with self._lock:
            self._generation += 1
            self._discarding = False
            self._discarded_generation = None
            return self._generation

    def put_if_current(self, target: queue.Queue[Any], item: Any, generation: int) -> bool:
        """Queue ``item`` only while ``generation`` is current; False when it was stale.

        Checking and queueing under the lock that ``cancel()`` takes means that
        once ``cancel()`` returns, no output of an older generation can enter a
        queue: a handler that checked staleness just before the cancel cannot
        slip one last chunk past the send loop's flush. ``target`` must not
        block (the unit's queues are unbounded).
        """
        with self._lock:
            if generation != self._generation:
                return False
            target.put(item)
            return True

    def is_discardable(self, generation: int) -> bool:
        """What the send loop drops: stale output, or anything not current while discarding."""
        with self._lock:
            return generation != self._generation or (
                self._discarding and generation == self._discarded_generation
            )
