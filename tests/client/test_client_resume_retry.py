"""A resume refused with "try again" (the shared session store did not answer) is tried again, not given up."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any

import pytest

from speech_to_speech.client import RealtimeClient, ReconnectPolicy, ResumeFailed
from speech_to_speech.client.link import Link, LinkClosed

QUICK = ReconnectPolicy(attempts=3, initial_delay_s=0.0, max_delay_s=0.0)
CREATED = {"type": "session.created", "server_event_seq": 1, "session_id": "sess_1", "resume_token": "rt_1",
           "attachment_generation": 1, "session": {"id": "sess_1", "capabilities": {"supports_session_resume": True}}}


def _refusal(code: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "code": code, "message": "no"}}


RESUMED = {"type": "session.resumed", "session_id": "sess_1", "resume_token": "rt_2", "attachment_generation": 2,
           "session": {"id": "sess_1"}, "last_client_event_id": None}


class ScriptedLink:
    """Says ``answers`` (to a session.resume, or at once), then drops (``drop``) or waits forever."""

    def __init__(self, answers: list[dict[str, Any]], drop: bool, resume: bool) -> None:
        self.answers = deque(json.dumps(a) for a in answers)
        self.drop, self.waiting_for_resume = drop, resume
        self.sent: list[dict[str, Any]] = []
        self._forever: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def send(self, message: str) -> None:
        self.sent.append(json.loads(message))
        if self.sent[-1]["type"] == "session.resume":
            self.waiting_for_resume = False

    async def recv(self) -> str:
        while self.waiting_for_resume:
            await asyncio.sleep(0.001)
        if self.answers:
            return self.answers.popleft()
        if self.drop:
            raise LinkClosed()
        await self._forever
        raise LinkClosed(1000)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if not self._forever.done():
            self._forever.set_result(None)

    def abort(self) -> None:
        pass


def _connector(links: list[ScriptedLink]) -> Any:
    opened = iter(links)

    async def connect(url: str) -> Link:
        return next(opened)

    return connect


async def test_a_resume_refused_as_the_store_is_unavailable_is_tried_again_and_resumes() -> None:
    links = [ScriptedLink([CREATED], drop=True, resume=False),
             ScriptedLink([_refusal("session_store_unavailable")], drop=False, resume=True),
             ScriptedLink([RESUMED], drop=False, resume=True)]
    client = RealtimeClient("ws://replicas/v1/realtime", reconnect=QUICK, connect=_connector(links),
                            heartbeat_interval_s=None, event_ack_interval_s=None)
    async with client:
        resumed = await client.wait_for("session.resumed", timeout_s=5)
        assert client.resumes == 1 and client.resume_token == "rt_2" and resumed.raw["session_id"] == "sess_1"
    assert [e["type"] for e in links[1].sent] == ["session.resume"]
    assert links[2].sent[0]["type"] == "session.resume" and links[2].sent[0]["resume_token"] == "rt_1"


async def test_a_resume_refused_for_good_ends_the_session() -> None:
    links = [ScriptedLink([CREATED], drop=True, resume=False),
             ScriptedLink([_refusal("session_resume_expired")], drop=False, resume=True)]
    client = RealtimeClient("ws://replicas/v1/realtime", reconnect=QUICK, connect=_connector(links),
                            heartbeat_interval_s=None, event_ack_interval_s=None)
    async with client:
        with pytest.raises(ResumeFailed):
            await client.wait_for("session.resumed", timeout_s=5)
