"""The link a RealtimeClient is on now, and the two tasks that serve it.

The reader hands the event in each frame to ``receive``; when the link fails,
it asks ``recover`` for the next one (None: the session is over). The writer
sends the ``Outbox`` on the link that is up, and is stopped while there is
none, so what the caller sends meanwhile waits for the next link.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from speech_to_speech.client.events import RealtimeEvent, decode_frame
from speech_to_speech.client.link import Link, LinkClosed
from speech_to_speech.client.outbox import Outbox
from speech_to_speech.protocol import NORMAL_CLOSURE


class LinkRunner:
    def __init__(self, outbox: Outbox, receive: Callable[[RealtimeEvent], None],
                 recover: Callable[[LinkClosed], Awaitable[Link | None]]) -> None:
        self.link: Link | None = None
        self._up = asyncio.Event()
        self._outbox = outbox
        self._receive = receive
        self._recover = recover
        self._reader: asyncio.Task[None] | None = None
        self._writer: asyncio.Task[None] | None = None

    @property
    def up(self) -> bool:
        """A link is attached and has not failed yet."""
        return self._up.is_set()

    def start(self, link: Link) -> None:
        """Serve the session's first link: read it, and write to it."""
        self.attach(link)
        self._reader = asyncio.create_task(self._read(), name="realtime-client-reader")

    def attach(self, link: Link) -> None:
        """``link`` is the one now (the first, or a resumed one): the writer sends on it."""
        self.link = link
        self._up.set()
        self._writer = asyncio.create_task(self._outbox.write_to(link), name="realtime-client-writer")

    def down(self) -> None:
        self._up.clear()

    async def detach(self) -> None:
        """The link failed: down, and no writing until the next one is attached."""
        self._up.clear()
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
            self._writer = None

    def drop(self) -> None:
        """Abort the link without a close frame; the reader sees it fail, and recovers."""
        if self.link is not None:
            self.link.abort()

    async def stop(self, close_timeout_s: float) -> None:
        """Stop both tasks, then close the link (1000), politely if it lets us within ``close_timeout_s``."""
        tasks = [task for task in (self._reader, self._writer) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        link = self.link  # a resume may have replaced the first one meanwhile
        if link is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(link.close(NORMAL_CLOSURE, "client closed"), close_timeout_s)
            link.abort()

    async def _read(self) -> None:
        link = self.link
        while link is not None:
            try:
                message = await link.recv()
            except LinkClosed as closed:
                link = await self._recover(closed)
                continue
            event = decode_frame(message)
            if event is not None:
                self._receive(event)
