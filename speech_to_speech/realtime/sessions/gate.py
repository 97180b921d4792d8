"""How a new session gets in, the same for both transports: a place in its address's limits, then a unit.

A WebSocket handshake and a WebRTC offer both pass one :class:`SessionGate`.
It hands back an Entry (sessions/claim.py: the place and the unit, each
given back once), or a :class:`Refusal` that says why not and when to try
again; each transport only chooses how to say it (HTTP status and
``Retry-After``, or an ``error`` event and close code 1013 to a browser: see
``app/router.py`` and docs/security.md, "When the server is full").

- Too many sessions from one address (``ClientAdmission``): 429
  ``too_many_sessions``, try again in a minute.
- Every unit busy: 503 ``session_limit_reached``, try again in a second,
  after a wait. The wait is ``--admission_wait_s``, and never shorter than
  ``BUSY_GRACE_S``, so a client that reconnects at once is not refused while
  its old session is still noticing the close; while a unit drains it lasts
  up to ``release_timeout_s``. Waiting requests are served in the order they
  came. With every unit taken, a session whose socket dropped is ended
  first: detached sessions never lock a new client out.
- Shutting down (``stop``): 503 ``server_shutting_down``, try again in a
  second (on another replica, through a balancer), for new sessions,
  resumes and requests still waiting for a unit alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import error_codes, error_types
from speech_to_speech.protocol.server_events.session import ErrorEvent, error_event
from speech_to_speech.protocol.server_events.shapes import ErrorDetail
from speech_to_speech.realtime.sessions.admission import WINDOW_S, ClientAdmission
from speech_to_speech.realtime.sessions.claim import Entry, UnitLease
from speech_to_speech.units.pool import PipelinePool
from speech_to_speech.units.unit import PipelineUnit

# The shortest wait for a unit (a reconnect races the close of its old session).
BUSY_GRACE_S = 0.5
# How often a waiting request looks for a free unit (a connection waiting, not the audio path).
POLL_S = 0.02
# When a refused client should try again: a unit may free at any moment; an address's minute must pass.
BUSY_RETRY_AFTER_S = 1
TOO_MANY_RETRY_AFTER_S = int(WINDOW_S)


@dataclass(frozen=True)
class Refusal:
    """Why a new session was not let in, and in how many seconds it may try again."""

    status: int  # the HTTP form: 429 (this address's limits) or 503 (every unit busy)
    code: str
    why: str
    retry_after_s: int
    type: str = error_types.INVALID_REQUEST_ERROR

    @property
    def message(self) -> str:
        """``why``, then ``; try again in N s``: the hint where a client shows only the message."""
        return f"{self.why}; try again in {self.retry_after_s} s"

    @property
    def event(self) -> ErrorEvent:
        """The ``error`` event: the standard fields, and ``retry_after_s`` (our extension)."""
        return error_event(self.code, self.message, type=self.type, retry_after_s=self.retry_after_s)

    @property
    def error(self) -> ErrorDetail:
        """The event's ``error`` object, which an HTTP refusal sends alone."""
        return self.event["error"]

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_s)}


class SessionGate:
    def __init__(self, pool: PipelinePool, settings: ServerSettings,
                 evict: Callable[[], bool] | None = None) -> None:
        """``evict``: end the session detached longest ago, if any (returns whether it did)."""
        self._pool = pool
        self._wait_s = max(settings.server.admission_wait_s, BUSY_GRACE_S)
        self._drain_s = settings.server.release_timeout_s
        self._evict = evict
        self._clients = ClientAdmission(settings.server.max_sessions_per_client,
                                        settings.server.max_sessions_per_minute)
        self._waiting: deque[object] = deque()
        self.stopped: str | None = None  # why no session is let in any more (a shutdown began)

    def stop(self, why: str) -> None:
        """Let no new session in from now on; safe from a signal handler (it only sets a field)."""
        if self.stopped is None:
            self.stopped = why

    @contextlib.asynccontextmanager
    async def session(self, address: str | None, *, unit: bool = True) -> AsyncIterator[Entry | Refusal]:
        """``enter``, and the Entry closed however the block ends (an error, a cancellation)."""
        entry = await self.enter(address, unit=unit)
        try:
            yield entry
        finally:
            if isinstance(entry, Entry):
                entry.close()

    async def enter(self, address: str | None, *, unit: bool = True) -> Entry | Refusal:
        """A place among the sessions of ``address``, then a unit; refused, nothing stays held.

        ``address`` None: a session admitted already (one taken over from the shared store)
        needs a unit only. ``unit`` False: a socket that only resumes a session needs none.
        The caller closes the Entry (``session`` does).
        """
        if self.stopped is not None:
            return self._stopping()
        leave = None
        if address is not None:
            refusal = self._clients.admit(address)
            if refusal is not None:
                return Refusal(429, error_codes.TOO_MANY_SESSIONS, refusal, TOO_MANY_RETRY_AFTER_S,
                               type=error_types.RATE_LIMIT_ERROR)
            leave = functools.partial(self._clients.leave, address)
        entry = Entry(leave)
        if not unit:
            return entry
        try:
            claimed = await self._claim()
        except BaseException:
            entry.close()
            raise
        if isinstance(claimed, Refusal):
            entry.close()
            return claimed
        entry.hold(UnitLease(self._pool, claimed))
        return entry

    async def _claim(self) -> PipelineUnit | Refusal:
        """A unit for a new session, waited for in turn; the busy Refusal when none came free in time."""
        ticket = object()
        self._waiting.append(ticket)
        try:
            started = time.monotonic()
            deadline = started + self._wait_s
            while True:
                now = time.monotonic()
                if self.stopped is not None:
                    return self._stopping()
                draining = any(slot.state == "draining" for slot in self._pool.status())
                if self._waiting[0] is ticket:
                    unit = self._pool.claim()
                    if unit is not None:
                        return unit
                    if not draining and self._evict is not None and self._evict():
                        deadline = max(deadline, now + self._drain_s)  # its unit comes back once drained
                if draining:
                    deadline = max(deadline, started + self._drain_s)
                if now > deadline:
                    return self._busy()
                await asyncio.sleep(POLL_S)
        finally:
            self._waiting.remove(ticket)

    def _stopping(self) -> Refusal:
        assert self.stopped is not None
        return Refusal(503, error_codes.SERVER_SHUTTING_DOWN, self.stopped, BUSY_RETRY_AFTER_S,
                       type=error_types.SERVER_ERROR)

    def _busy(self) -> Refusal:
        slots = self._pool.status()
        in_use = sum(1 for slot in slots if slot.state != "idle" or not slot.healthy)
        why = f"busy: {in_use} of {len(slots)} sessions in use"
        return Refusal(503, error_codes.SESSION_LIMIT_REACHED, why, BUSY_RETRY_AFTER_S)
