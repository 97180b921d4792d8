"""One socket serving a live session: the frames it writes, the client events it reads, its hand-over.

A :class:`~speech_to_speech.realtime.sessions.live.LiveSession` outlives its
sockets; each socket that serves it is an :class:`Attachment` with a writer
task (the prelude, then the session's queue) and a receiver task (client
events into the service). When a newer socket resumes the session, the old
one is told ``session.replaced`` and closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech.protocol import GOING_AWAY, NO_STATUS_RECEIVED, NORMAL_CLOSURE
from speech_to_speech.protocol.server_events.session import session_replaced
from speech_to_speech.realtime.connection.frames import Frame, to_frame
from speech_to_speech.realtime.connection.outbound import OutboundQueue
from speech_to_speech.realtime.connection.transport import Transport
from speech_to_speech.realtime.service.realtime_service import RealtimeService

# Close codes of a client that said goodbye: its session ends at once. 1005 is a close frame without a
# code (what a browser's or Node's ``ws.close()`` sends); 1001 a page or app going away. Any other end
# (1006: the connection dropped without a close frame) detaches the session for its grace period.
GOODBYE_CODES = frozenset({NORMAL_CLOSURE, GOING_AWAY, NO_STATUS_RECEIVED})
# Frames larger than this are parsed (and their audio decoded) on a worker thread.
OFF_LOOP_BYTES = 64 * 1024
# How long the last events may take to reach a client the server is closing.
FLUSH_TIMEOUT_S = 2.0

Incoming = AsyncIterator[str | bytes]


@dataclass(eq=False)
class Attachment:
    """One socket serving a session: its generation, its queue, and the tasks that pump it."""

    generation: int
    transport: Transport
    outgoing: OutboundQueue
    prelude: tuple[Frame, ...] = ()  # sent before the queue: session.resumed and the replay
    # Set by the session when it takes the socket away: "replaced" (a newer socket) or "ended".
    released: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    def release(self, why: str) -> None:
        if not self.released.done():
            self.released.set_result(why)

    async def write(self) -> None:
        """Send the prelude, then every frame the session queues, until cancelled."""
        for frame in self.prelude:
            await self.transport.send_text(frame.text)
        while True:
            frame = await self.outgoing.get()
            await self.transport.send_text(frame.text)
            self.outgoing.task_done()

    async def hand_over(self, session_id: str) -> None:
        """A newer socket replaced this one: stop pumping, tell this one so, and close it."""
        await cancel_tasks(*self.tasks)
        replaced = to_frame(session_replaced(session_id, self.generation))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.transport.send_text(replaced.text), FLUSH_TIMEOUT_S)
        with contextlib.suppress(Exception):
            await self.transport.close(NORMAL_CLOSURE, "session replaced")


async def receive(service: RealtimeService, incoming: Incoming) -> None:
    """Feed the socket's client events to ``service``; a large frame is parsed on a worker thread."""
    async for message in incoming:
        if len(message) > OFF_LOOP_BYTES:
            service.last_activity = time.monotonic()
            service.handle_client_event(await asyncio.to_thread(service.prepare_client_event, message))
        else:
            service.handle_client_event(message)


async def cancel_tasks(*tasks: asyncio.Task[Any]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(BaseException):
            await task
