"""A server that closes with 1012 (service restart) is reconnected to and the session resumed; 1001 ends it."""

from __future__ import annotations

import asyncio
from json import dumps, loads

import pytest
from websockets.asyncio.server import ServerConnection, serve

from speech_to_speech.client import ConnectionLost, ConnectionResumed, RealtimeClient, ReconnectPolicy
from speech_to_speech.protocol import GOING_AWAY, SERVICE_RESTART

FAST_RETRY = ReconnectPolicy(attempts=3, initial_delay_s=0.05, max_delay_s=0.1)
CREATED = dumps({"type": "session.created", "event_id": "e1", "server_event_seq": 1, "session_id": "s1",
                 "resume_token": "rt_1", "session": {"id": "s1", "capabilities": {"supports_session_resume": True}}})


class RestartingReplica:
    """Opens a session, then closes its socket with ``code``; a later ``?autostart=0`` socket resumes it."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.resume_requests: list[dict[str, object]] = []

    async def __call__(self, connection: ServerConnection) -> None:
        if connection.request is not None and "autostart=0" in connection.request.path:
            self.resume_requests.append(loads(await connection.recv()))
            await connection.send(dumps({"type": "session.resumed", "event_id": "e2", "session_id": "s1",
                                         "resume_token": "rt_2", "attachment_generation": 2}))
            await connection.wait_closed()
            return
        await connection.send(CREATED)
        await asyncio.sleep(0.05)
        await connection.close(self.code, "server restarting: reconnect and resume")


async def test_a_restart_close_is_resumed_from_the_last_event_received() -> None:
    replica = RestartingReplica(SERVICE_RESTART)
    async with serve(replica, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with RealtimeClient(f"ws://127.0.0.1:{port}/v1/realtime", reconnect=FAST_RETRY,
                                  close_timeout_s=0.2) as client:
            resumed = await client.wait_for("session.resumed", timeout_s=5)
    assert isinstance(resumed, ConnectionResumed)
    assert replica.resume_requests == [{
        "type": "session.resume", "event_id": replica.resume_requests[0]["event_id"], "session_id": "s1",
        "resume_token": "rt_1", "last_received_server_event_seq": 1}]
    assert client.resumes == 1 and client.resume_token == "rt_2"


async def test_a_going_away_close_ends_the_session_without_a_reconnect() -> None:
    replica = RestartingReplica(GOING_AWAY)
    async with serve(replica, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with RealtimeClient(f"ws://127.0.0.1:{port}/v1/realtime", reconnect=FAST_RETRY,
                                  close_timeout_s=0.2) as client:
            with pytest.raises(ConnectionLost, match="code 1001"):
                await client.wait_for("session.resumed", timeout_s=5)
    assert replica.resume_requests == []
