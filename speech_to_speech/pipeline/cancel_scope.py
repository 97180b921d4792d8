"""The one cancellation primitive of a pipeline unit: a generation counter.

Every request to the pipeline is made under the current generation, and
everything produced for it carries that generation. Handlers check
``is_stale(gen)`` on every token or audio chunk; ``cancel()`` moves the
generation on, so every earlier one is stale at once, on every queue.

There is no separate discard flag. A design in which some output travels
untagged needs one, to drop everything until the cancelled response's
sentinel comes back; here every item that belongs to a response carries its
generation, so "stale" already names exactly what to drop, at any time after
``cancel()`` returned, and a sentinel of a cancelled generation changes
nothing. Which response an item belongs to is the response id *and* the
generation together: one response id can be asked of the LLM twice (a
speculative request, then the real one), and only the generation tells the
two apart.
"""

from __future__ import annotations

import threading
from typing import TypeVar

from speech_to_speech.pipeline.queues import Sink

Item = TypeVar("Item")


class CancelScope:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0

    @property
    def generation(self) -> int:
        return self._generation

    def is_stale(self, generation: int) -> bool:
        return generation != self._generation

    def cancel(self) -> int:
        """Make everything requested so far stale; returns the new generation."""
        with self._lock:
            self._generation += 1
            return self._generation

    def put_if_current(self, target: Sink[Item], item: Item, generation: int) -> bool:
        """Queue ``item`` only while ``generation`` is current; False when it was stale.

        Checking and queueing under the lock that ``cancel()`` takes means that
        once ``cancel()`` returns, no output of an older generation can enter a
        queue: a handler that checked staleness just before the cancel cannot
        slip one last chunk in behind it. ``target`` must not block (the
        unit's queues are unbounded).
        """
        with self._lock:
            if generation != self._generation:
                return False
            target.put(item)
            return True
