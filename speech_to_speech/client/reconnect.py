"""Reconnecting after a dropped connection: which closes to resume, the backoff, the ``session.resume`` handshake.

The server keeps a detached session running for ``disconnect_grace_s`` and
journals what it says meanwhile; a new socket on ``?autostart=0`` whose first
event is ``session.resume`` gets ``session.resumed`` and then every journaled
event after the seq it names. A refusal (``session_resume_expired``,
``session_resume_invalid_token``) is final; anything else is worth another try,
which ``reattach`` makes as often as the ``ReconnectPolicy`` allows.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from speech_to_speech.client.errors import ClientError, ConnectionLost, ResumeFailed
from speech_to_speech.client.link import Connector, Link, LinkClosed
from speech_to_speech.protocol import GOING_AWAY, NORMAL_CLOSURE, POLICY_VIOLATION, TRY_AGAIN_LATER
from speech_to_speech.protocol.error_codes import (
    SESSION_RESUME_EXPIRED,
    SESSION_RESUME_INVALID_TOKEN,
    SESSION_STORE_UNAVAILABLE,
)
from speech_to_speech.protocol.resume import LAST_FINISHED_RESPONSE_ID

log = logging.getLogger(__name__)

# Close codes after which there is no session to resume: a goodbye (1000), the server going away (1001),
# a policy close (1008: output limit, refused resume), "try again later" (1013). Any other close is resumed,
# 1012 (service restart) above all: a replica restarting under an orchestrator, whose balancer sends the
# resume to another replica (docs/deployment.md).
FINAL_CLOSE_CODES = frozenset({NORMAL_CLOSURE, GOING_AWAY, POLICY_VIOLATION, TRY_AGAIN_LATER})

# Refusals of session.resume that a later attempt may not meet: a store of shared sessions that did
# not answer, or a session whose old replica did not let it go in time.
RETRIED_REFUSALS = frozenset({SESSION_STORE_UNAVAILABLE})


@dataclass(frozen=True)
class ReconnectPolicy:
    """How hard to try: ``attempts`` connections, waiting a jittered, doubling delay before each.

    The n-th wait is uniform in [d/2, d] with d = min(max_delay_s, initial_delay_s * 2**(n-1)),
    so clients dropped together by one network failure do not all come back in the same instant.
    """

    attempts: int = 5
    initial_delay_s: float = 0.25
    max_delay_s: float = 4.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("ReconnectPolicy.attempts must be at least 1")
        if self.initial_delay_s < 0 or self.max_delay_s < self.initial_delay_s:
            raise ValueError("ReconnectPolicy needs 0 <= initial_delay_s <= max_delay_s")

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """The wait before each attempt, in seconds (``attempts`` of them)."""
        rng = rng or random.Random()
        for attempt in range(self.attempts):
            ceiling = min(self.max_delay_s, self.initial_delay_s * (2 ** attempt))
            yield rng.uniform(ceiling / 2, ceiling) if self.jitter else ceiling


def resume_url(url: str) -> str:
    """``url`` with ``autostart=0``: the server waits for ``session.resume`` instead of starting a session."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "autostart"] + [("autostart", "0")]
    return urlunsplit(parts._replace(query=urlencode(query)))


@dataclass(frozen=True)
class Resumed:
    """What ``session.resumed`` said: the rotated token, the new generation, and the event itself."""

    resume_token: str | None
    attachment_generation: int | None
    event: Mapping[str, Any]


async def resume(link: Link, *, session_id: str, resume_token: str, last_seq: int, event_id: str,
                 timeout: float, last_finished_response_id: str | None = None) -> Resumed:
    """Send ``session.resume`` on a fresh ``link`` and read the answer.

    Raises ResumeFailed when the server refuses (final), LinkClosed or TimeoutError when the
    connection failed first (worth another attempt).
    """
    request = {"type": "session.resume", "event_id": event_id, "session_id": session_id,
               "resume_token": resume_token, "last_received_server_event_seq": last_seq}
    if last_finished_response_id is not None:  # so a replica taking over does not end it a second time
        request[LAST_FINISHED_RESPONSE_ID] = last_finished_response_id
    await link.send(json.dumps(request))
    async with asyncio.timeout(timeout):
        while True:
            message = await link.recv()
            event = json.loads(message)
            if not isinstance(event, dict):
                continue
            if event.get("type") == "session.resumed":
                token = event.get("resume_token")
                generation = event.get("attachment_generation")
                return Resumed(token if isinstance(token, str) else None,
                               generation if isinstance(generation, int) else None, event)
            if event.get("type") == "error":
                raise _refusal(event)


@dataclass(frozen=True)
class Reattached:
    """A new link the server resumed the session on, what it said, and the attempt that got it."""

    link: Link
    resumed: Resumed
    attempt: int


async def reattach(connect: Connector, url: str, policy: ReconnectPolicy, *, lost: ConnectionLost, session_id: str,
                   resume_token: str, last_seq: int, last_finished_response_id: str | None,
                   new_event_id: Callable[[], str], timeout: float) -> Reattached:
    """Reconnect to ``url`` and resume the session, waiting and trying again as ``policy`` says.

    Raises ResumeFailed when the server refuses for good, and ConnectionLost (``lost``, with the
    attempts) when none of them got through.
    """
    last_error: BaseException | None = None
    for attempt, delay in enumerate(policy.delays(), 1):
        await asyncio.sleep(delay)
        try:
            link = await connect(resume_url(url))
        except ClientError as error:
            last_error = error
            continue
        try:
            resumed = await resume(link, session_id=session_id, resume_token=resume_token, last_seq=last_seq,
                                   event_id=new_event_id(), timeout=timeout,
                                   last_finished_response_id=last_finished_response_id)
        except asyncio.CancelledError:
            link.abort()  # closed while resuming: this link is nobody's
            raise
        except ResumeFailed as refusal:
            await link.close()
            if refusal.code not in RETRIED_REFUSALS:
                raise
            last_error = refusal  # "try again": the next attempt may be served
            continue
        except (LinkClosed, TimeoutError, ValueError) as error:
            link.abort()
            last_error = error
            continue
        return Reattached(link, resumed, attempt)
    raise ConnectionLost(f"{lost}; {policy.attempts} reconnect attempt(s) failed (last: {last_error})")


def _refusal(event: Mapping[str, Any]) -> ResumeFailed:
    error = event.get("error")
    if isinstance(error, Mapping):
        code, message = error.get("code"), error.get("message")
    else:  # the flat handshake shape
        code, message = event.get("code"), error
    code = None if code is None else str(code)
    what = {SESSION_RESUME_EXPIRED: "the session is over on the server (it expired or ended)",
            SESSION_RESUME_INVALID_TOKEN: "the server refused the resume token",
            }.get(code or "", "the server refused to resume")
    return ResumeFailed(f"could not resume the session: {what} ({code}: {message})", code=code)

