"""Queues that wake an asyncio consumer without polling."""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import TypeVar

Item = TypeVar("Item")


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
