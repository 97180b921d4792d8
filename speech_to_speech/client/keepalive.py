"""The client's two timers: ``session.event_ack`` and ``session.heartbeat``.

The ack tells the server how far we hold its events, so it can trim its
replay journal. A heartbeat still unanswered when the next one is due means
the connection died without either end hearing of it (a phone changing
networks, a NAT forgetting the flow): dropping it then starts the resume now
instead of when TCP gives up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

log = logging.getLogger(__name__)


class KeptAlive(Protocol):
    """The part of the client the timers read, and the one they send through."""

    heartbeat_interval_s: float | None
    event_ack_interval_s: float | None

    @property
    def connected(self) -> bool: ...

    @property
    def capabilities(self) -> Mapping[str, Any]: ...

    @property
    def supports_resume(self) -> bool: ...

    @property
    def last_server_event_seq(self) -> int: ...

    def send_nowait(self, event: Mapping[str, Any]) -> str: ...


class Keepalive:
    """Runs the timers for ``client`` (an interval of None turns that one off); ``drop`` aborts its connection."""

    def __init__(self, client: KeptAlive, drop: Callable[[], None]) -> None:
        self._client = client
        self._drop = drop
        self._acked_seq = 0
        self._heartbeat_unanswered = False
        self._timers: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for interval, tick in ((self._client.event_ack_interval_s, self._ack),
                               (self._client.heartbeat_interval_s, self._beat)):
            if interval:
                self._timers.append(asyncio.create_task(self._every(interval, tick), name="realtime-client-timer"))

    def cancel(self) -> None:
        """Stop ticking at once (the client does before its goodbye: nothing may follow that)."""
        for timer in self._timers:
            timer.cancel()

    async def wait_cancelled(self) -> None:
        await asyncio.gather(*self._timers, return_exceptions=True)

    def heartbeat_answered(self) -> None:
        """``session.heartbeat_ack`` came, or a new connection began: nothing is outstanding."""
        self._heartbeat_unanswered = False

    async def _every(self, interval: float, tick: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(interval)
            if self._client.connected:  # not while reconnecting: the resume itself says where we are
                tick()

    def _ack(self) -> None:
        seq = self._client.last_server_event_seq
        if self._client.supports_resume and seq > self._acked_seq:
            self._acked_seq = seq
            self._client.send_nowait({"type": "session.event_ack", "server_event_seq": seq})

    def _beat(self) -> None:
        capabilities = self._client.capabilities
        if not (capabilities.get("supports_session_lease") or self._client.supports_resume):
            return
        if self._heartbeat_unanswered:
            log.info("no session.heartbeat_ack within %gs: dropping the connection", self._client.heartbeat_interval_s)
            self._heartbeat_unanswered = False
            self._drop()
            return
        self._heartbeat_unanswered = True
        self._client.send_nowait({"type": "session.heartbeat"})
