"""The queues between stages: what a stage puts on, and queues that wake an asyncio consumer without polling."""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Protocol, TypeVar

Item = TypeVar("Item")
Taken = TypeVar("Taken", contravariant=True)


class Sink(Protocol[Taken]):
    """Where a stage puts its output: any queue whose items include what it puts.

    Only ``put`` is asked for, so a queue of a wider union is a sink of a narrower
    one (the TTS feeds the send loop's queue, which also takes the viseme stage's
    items), while a queue that lacks one of the stage's item types is a type error.
    """

    def put(self, item: Taken, block: bool = True, timeout: float | None = None) -> None: ...


class NotifyingQueue(queue.Queue[Item]):
    """A thread-safe queue that calls a listener after every put.

    The session's send loop (realtime/service/send_loop.py) registers a
    listener that sets an asyncio event through ``loop.call_soon_threadsafe``,
    so it awaits output instead of sleeping and polling.
    """

    def __init__(self) -> None:
        super().__init__()
        self._listener: Callable[[], None] | None = None

    def set_listener(self, listener: Callable[[], None] | None) -> None:
        self._listener = listener

    def put(self, item: Item, block: bool = True, timeout: float | None = None) -> None:
        super().put(item, block, timeout)
        listener = self._listener
        if listener is not None:
            listener()

    def drain(self) -> list[Item]:
        """Take everything queued right now, without blocking."""
        items: list[Item] = []
        while True:
            try:
                items.append(self.get_nowait())
            except queue.Empty:
                return items
