"""Is a WebRTC peer still there? Ends a call whose peer vanished without hanging up.

A browser that dies (a killed tab, a closed laptop lid, a lost network) sends
no ``DELETE``, no data-channel close and no DTLS close_notify. aioice would
notice only when six consent checks in a row went unanswered, 30 to 45 s
later, and all that time the call holds its pipeline unit.

A live peer is never silent for long, however quiet its user: it answers the
ICE consent checks aioice sends it every 4 to 6 s (RFC 7675; the interval is
randomised between 0.8 and 1.2 times 5 s) and sends its own (aioice every 4 to
6 s, Chrome about every 2.5 s), on top of any RTP, RTCP and data-channel
traffic. So the watch keeps one clock: when the call's ICE sockets last
received a datagram of any kind (STUN, DTLS, SRTP, SRTCP, SCTP). A muted, DTX
or data-channel-only peer still answers consent and keeps it running; a peer
that sent nothing for :data:`SILENCE_LIMIT_S` is gone.

The figures, for a unit free within 10 s of the peer's death:

- :data:`SILENCE_LIMIT_S` (7 s): above the longest gap between a live peer's
  consent exchanges (6 s plus a round trip), and two such streams run, one per
  direction, so one lost packet does not end a live call.
- :data:`TICK_S` (0.5 s): how late the watch may notice.
- The session then ends as after a ``DELETE`` and its unit drains (well under a
  second once the turn is over), which leaves about 2 s to spare.

aioice offers no hook for "a datagram arrived", so the watch wraps
``datagram_received`` of each of the call's ``StunProtocol`` objects (found
through aiortc's ``RTCIceGatherer``). Where those internals are not found, the
call is not watched and aioice's consent expiry ends it, as before.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from aiortc import RTCPeerConnection

log = logging.getLogger(__name__)

SILENCE_LIMIT_S = 7.0
TICK_S = 0.5


def ice_sockets(pc: RTCPeerConnection) -> Iterator[Any]:
    """The ``aioice.ice.StunProtocol`` of every ICE socket of ``pc`` (one connection when bundled)."""
    dtls = [t.receiver.transport for t in pc.getTransceivers()]
    if pc.sctp is not None:
        dtls.append(pc.sctp.transport)
    seen: set[int] = set()
    for transport in dtls:
        connection = getattr(transport.transport.iceGatherer, "_connection", None)
        if connection is None or id(connection) in seen:
            continue
        seen.add(id(connection))
        yield from getattr(connection, "_protocols", [])


class InboundClock:
    """When the peer last sent the call anything, by ``clock`` (monotonic seconds)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.last = clock()
        self._hooked: set[int] = set()

    def listen(self, pc: RTCPeerConnection) -> int:
        """Stamp every datagram ``pc``'s ICE sockets receive from now on; returns how many sockets are heard."""
        for protocol in ice_sockets(pc):
            if id(protocol) not in self._hooked:
                self._hooked.add(id(protocol))
                protocol.datagram_received = self._stamping(protocol.datagram_received)
        return len(self._hooked)

    def _stamping(self, received: Callable[[bytes, Any], None]) -> Callable[[bytes, Any], None]:
        def datagram_received(data: bytes, addr: Any) -> None:
            self.last = self._clock()
            received(data, addr)

        return datagram_received

    def silent_for(self) -> float:
        return self._clock() - self.last


async def watch_peer(pc: RTCPeerConnection, on_gone: Callable[[], None], name: str,
                     limit_s: float = SILENCE_LIMIT_S, tick_s: float = TICK_S) -> None:
    """Call ``on_gone`` once ``pc``'s peer has sent nothing for ``limit_s``; returns then (or never)."""
    clock = InboundClock()
    if not clock.listen(pc):
        log.warning("%s: no ICE socket found to watch; a vanished peer is noticed only when consent expires", name)
        return
    due = time.monotonic() + tick_s
    while True:
        await asyncio.sleep(tick_s)
        now = time.monotonic()
        on_time = now - due < tick_s
        due = now + tick_s
        # A tick that comes late means the loop stalled: what arrived meanwhile may not be read yet.
        if on_time and clock.silent_for() > limit_s:
            log.info("%s: nothing from the peer for %.1f s; ending the call", name, clock.silent_for())
            on_gone()
            return
