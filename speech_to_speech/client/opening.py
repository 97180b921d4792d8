"""Opening a session: connect, then read the ``session.created`` that every new session starts with.

Its counterpart after a dropped connection is ``reattach`` (reconnect.py).
"""

from __future__ import annotations

import asyncio

from speech_to_speech.client.errors import SessionLimitReached, WaitTimeout
from speech_to_speech.client.events import ErrorEvent, SessionCreated, decode_frame, protocol_error
from speech_to_speech.client.link import Connector, Link, LinkClosed
from speech_to_speech.protocol.error_codes import SESSION_LIMIT_REACHED


async def open_session(connect: Connector, url: str, *, timeout: float) -> tuple[Link, SessionCreated]:
    """A new link to ``url`` and its ``session.created``; a link that gives none is aborted."""
    link = await connect(url)
    try:
        return link, await _session_created(link, timeout)
    except BaseException:
        link.abort()
        raise


async def _session_created(link: Link, timeout: float) -> SessionCreated:
    try:
        async with asyncio.timeout(timeout):
            while True:
                event = decode_frame(await link.recv())
                if isinstance(event, SessionCreated):
                    return event
                if isinstance(event, ErrorEvent):
                    if event.code == SESSION_LIMIT_REACHED:
                        raise SessionLimitReached(f"the server is at its session limit: {event.message}")
                    raise protocol_error(event, "the server sent an error instead of session.created")
    except TimeoutError:
        raise WaitTimeout(f"the server sent nothing within {timeout:.0f}s of connecting") from None
    except LinkClosed as closed:
        raise closed.lost() from None
