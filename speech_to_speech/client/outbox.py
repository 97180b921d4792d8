"""The client events on their way out: stamped, queued, and written in order to whichever link is up.

The queue outlives connections: what the caller sends while the client
reconnects waits here and goes out on the new link, after what a resume says
the server never took (``SentEvents``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import Mapping
from typing import Any

from speech_to_speech.client.link import Link, LinkClosed
from speech_to_speech.client.sent_events import SentEvents


class Outbox:
    def __init__(self) -> None:
        self._queue: deque[dict[str, Any]] = deque()
        self._ready = asyncio.Event()
        self._sent = SentEvents()  # sent, not yet known to be taken: what a resume may send again
        self._serial = itertools.count(1)

    def new_event_id(self) -> str:
        return f"evt_client_{next(self._serial)}"

    def put(self, event: Mapping[str, Any]) -> str:
        """Queue ``event`` (stamped with an ``event_id`` if it has none); returns the ``event_id``."""
        stamped = {"event_id": self.new_event_id(), **event}
        self._queue.append(stamped)
        self._ready.set()
        return str(stamped["event_id"])

    def requeue_lost(self, resumed: Mapping[str, Any]) -> None:
        """After ``session.resumed``: what the server did not take goes first, before what waited meanwhile."""
        self._queue.extendleft(reversed(self._sent.lost(resumed)))

    def clear(self) -> None:
        self._queue.clear()

    async def write_to(self, link: Link) -> None:
        """Send queued events in order until ``link`` fails; the one that failed stays queued for the next."""
        while True:
            while not self._queue:
                self._ready.clear()
                await self._ready.wait()
            event = self._queue[0]
            try:
                await link.send(json.dumps(event, separators=(",", ":")))
            except LinkClosed:
                return  # the reader sees the close too, and recovers
            if self._queue and self._queue[0] is event:  # not cleared (the session ended) while it went out
                self._queue.popleft()
                self._sent.sent(event)
