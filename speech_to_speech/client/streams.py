"""Fan-out of one ordered stream to any number of async readers, each from when it subscribed.

A ``Subscription`` starts buffering the moment it is created (not at its first
``__anext__``), so code that subscribes and then sends a request cannot miss
the reply. It is held weakly by its ``Fanout``: a reader that stops iterating
and drops it stops costing memory. When the stream ends, every reader sees
the end: a clean stop, or the exception that ended it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class Subscription(Generic[T]):
    """An async iterator over what its Fanout published after it was created."""

    def __init__(self, initial: Iterable[T] = ()) -> None:
        self._items: deque[T] = deque(initial)
        self._wake = asyncio.Event()
        self._ended = False
        self._error: BaseException | None = None
        self._closed = False

    def _push(self, item: T) -> None:
        if not self._closed:
            self._items.append(item)
            self._wake.set()

    def _end(self, error: BaseException | None) -> None:
        if not self._ended:
            self._ended, self._error = True, error
            self._wake.set()

    def close(self) -> None:
        """Stop receiving (what is buffered is dropped)."""
        self._closed = True
        self._items.clear()
        self._end(None)

    def __aiter__(self) -> Subscription[T]:
        return self

    async def __anext__(self) -> T:
        while True:
            if self._items:
                return self._items.popleft()
            if self._ended:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            self._wake.clear()
            await self._wake.wait()


class Fanout(Generic[T]):
    """Publishes items to every live Subscription, in order; ``end`` ends them all (and later ones)."""

    def __init__(self) -> None:
        self._subscribers: weakref.WeakSet[Subscription[T]] = weakref.WeakSet()
        self._ended = False
        self._error: BaseException | None = None

    def subscribe(self, initial: Iterable[T] = ()) -> Subscription[T]:
        subscription: Subscription[T] = Subscription(initial)
        if self._ended:
            subscription._end(self._error)
        else:
            self._subscribers.add(subscription)
        return subscription

    @property
    def has_subscribers(self) -> bool:
        return len(self._subscribers) > 0

    def publish(self, item: T) -> None:
        for subscription in list(self._subscribers):
            subscription._push(item)

    def end(self, error: BaseException | None = None) -> None:
        if self._ended:
            return
        self._ended, self._error = True, error
        for subscription in list(self._subscribers):
            subscription._end(error)
        self._subscribers = weakref.WeakSet()
