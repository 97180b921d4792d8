"""`local`'s in-process server is `serve`'s: a session open when it stops is told so and closed."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack

from speech_to_speech.client.local import loopback_server
from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import GOING_AWAY
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .client_harness import SCRIPTED


async def test_stopping_the_local_server_ends_its_sessions_with_an_error_and_a_close() -> None:
    stack = ExitStack()
    url = await asyncio.to_thread(stack.enter_context, loopback_server(ServerSettings(**SCRIPTED), any_port=True))
    try:
        async with RealtimeTestClient.connect(url) as client:
            await client.wait_for("session.created")
            stopping = asyncio.create_task(asyncio.to_thread(stack.close))
            error = await client.wait_for("error")
            assert error["error"]["code"] == "server_shutting_down"
            assert await client.wait_closed(timeout=15) == GOING_AWAY
            await stopping
    finally:
        await asyncio.to_thread(stack.close)
