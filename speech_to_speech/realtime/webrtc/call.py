"""One WebRTC call: an aiortc peer connection serving one Realtime session.

The call answers the offer, then runs the session it is given (``serve_session``)
over a :class:`DataChannelTransport`: server events go out on the
``oai-events`` data channel the client created (buffered until it opens, so
``session.created`` is the first message on it), client events come in from
it, audio plays on a :class:`PlayoutTrack` and is heard through an
:class:`InputPump`. The call ends when the client hangs up (``DELETE``, the
data channel or the connection closes: aiortc closes the connection on DTLS
close_notify, and the data channels on an SCTP abort or shutdown), when it
never connects, when its peer vanished without a word (``webrtc_liveness``),
or when the session ends; then the peer connection is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiortc import RTCConfiguration, RTCDataChannel, RTCIceServer, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamTrack

from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.protocol import NORMAL_CLOSURE
from speech_to_speech.realtime.connection.transport import Transport
from speech_to_speech.realtime.service.realtime_service import RealtimeService
from speech_to_speech.realtime.webrtc.liveness import watch_peer
from speech_to_speech.realtime.webrtc.media import InputPump, PlayoutTrack, loopback_candidates
from speech_to_speech.realtime.wire.errors import RealtimeError

log = logging.getLogger(__name__)

EVENTS_CHANNEL = "oai-events"

Incoming = AsyncIterator[str | bytes]
# Runs the session over (transport, incoming client events, a hook that receives the service).
Session = Callable[[Transport, Incoming, Callable[[RealtimeService], None]], Awaitable[None]]


class DataChannelTransport(Transport):
    """Server events on the call's events channel; audio on its playout track."""

    def __init__(self, media: PlayoutTrack, expects_channel: bool, on_close: Callable[[], None]) -> None:
        self.media = media
        self.expects_channel = expects_channel
        self._on_close = on_close
        self._channel: RTCDataChannel | None = None
        self._early: list[str] = []  # sent before the channel opened: session.created first

    def attach(self, channel: RTCDataChannel) -> None:
        self._channel = channel
        for message in self._early:
            channel.send(message)
        self._early.clear()

    async def send_text(self, message: str) -> None:
        channel = self._channel
        if channel is None:
            if self.expects_channel:
                self._early.append(message)
            return  # an audio-only call: nowhere to send events
        if channel.readyState != "open":
            raise ConnectionError("the events data channel is closed")
        channel.send(message)

    async def close(self, code: int = NORMAL_CLOSURE, reason: str = "") -> None:
        self._on_close()


class WebRTCCall:
    def __init__(self, call_id: str, ice_servers: list[dict[str, Any]], connect_timeout_s: float) -> None:
        self.id = call_id
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[RTCIceServer(**s) for s in ice_servers]))
        self.track = PlayoutTrack()
        self.transport: DataChannelTransport | None = None
        self.initial_session: dict[str, Any] | None = None
        self._connect_timeout_s = connect_timeout_s
        self._incoming: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self._service: RealtimeService | None = None
        self._connected = asyncio.Event()
        self._ended = False
        self._helpers: set[asyncio.Task[None]] = set()
        self.task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ signalling

    async def answer(self, offer_sdp: str) -> str:
        """The SDP answer to ``offer_sdp``; raises ValueError (or an aiortc error) for an offer it cannot take."""
        pc = self.pc
        pc.on("datachannel", self._on_datachannel)
        pc.on("track", self._on_track)
        pc.on("connectionstatechange", self._on_connection_state)
        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer_sdp, type="offer"))
        kinds = [t.kind for t in pc.getTransceivers()]
        if "audio" in kinds:
            pc.addTrack(self.track)
        expects_channel = pc.sctp is not None
        if not kinds and not expects_channel:
            raise ValueError("the offer has neither an audio section nor a data channel")
        self.transport = DataChannelTransport(self.track, expects_channel, self.end)
        answer = await pc.createAnswer()
        with loopback_candidates():
            await pc.setLocalDescription(answer)
        return str(pc.localDescription.sdp)

    def _on_datachannel(self, channel: RTCDataChannel) -> None:
        if channel.label != EVENTS_CHANNEL or self.transport is None:
            log.info("call %s: ignoring data channel %r", self.id, channel.label)
            return
        channel.on("message", self._incoming.put_nowait)
        channel.on("close", self.end)
        self.transport.attach(channel)
        self._connected.set()

    def _on_track(self, track: MediaStreamTrack) -> None:
        if track.kind == "audio":
            self._spawn(InputPump(track, self._hear).run(), "input")

    async def _on_connection_state(self) -> None:
        state = self.pc.connectionState
        log.debug("call %s: connection %s", self.id, state)
        if state == "connected" and self.transport is not None and not self.transport.expects_channel:
            self._connected.set()
        elif state in ("failed", "closed"):
            self.end()

    def _hear(self, samples: FloatAudio) -> None:
        service = self._service
        if service is not None:
            service.push_input(samples)

    # ------------------------------------------------------------ session

    def start(self, session: Session, on_closed: Callable[[WebRTCCall], None]) -> None:
        """Run ``session`` for this call in a task; ``on_closed`` once it ended and the call is closed."""
        self.task = asyncio.create_task(self._run(session, on_closed), name=f"webrtc-call-{self.id}")
        self._spawn(self._watch(), "liveness")

    async def _run(self, session: Session, on_closed: Callable[[WebRTCCall], None]) -> None:
        assert self.transport is not None
        try:
            await session(self.transport, self._messages(), self._attach)
        except Exception:
            log.exception("call %s: the session failed", self.id)
        finally:
            self._service = None  # its unit is released: no more audio for it
            self.track.set_play_listener(None)
            await self.close()
            on_closed(self)

    def _attach(self, service: RealtimeService) -> None:
        self._service = service
        if self.initial_session is not None:
            try:
                service.configure(self.initial_session)  # checked before the answer; session.created shows it
            except RealtimeError as error:
                log.warning("call %s: initial session not applied: %s", self.id, error.message)

    async def _messages(self) -> Incoming:
        while (message := await self._incoming.get()) is not None:
            yield message

    async def _watch(self) -> None:
        """End the call if it does not connect in time, or later if its peer goes silent."""
        try:
            await asyncio.wait_for(self._connected.wait(), self._connect_timeout_s)
        except TimeoutError:
            log.info("call %s: not connected within %.0f s; ending it", self.id, self._connect_timeout_s)
            self.end()
            return
        await watch_peer(self.pc, self.end, f"call {self.id}")  # end(): the path a DELETE takes

    def end(self) -> None:
        """Hang up: the session ends, then the call closes."""
        if not self._ended:
            self._ended = True
            self._incoming.put_nowait(None)

    async def hangup(self, timeout_s: float) -> None:
        """End the call and wait (up to ``timeout_s``) until its session released its unit."""
        self.end()
        if self.task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.task), timeout_s)

    async def close(self) -> None:
        self.end()
        for task in list(self._helpers):
            task.cancel()
        for task in list(self._helpers):
            with contextlib.suppress(BaseException):
                await task
        self.track.stop()
        await self.pc.close()

    def _spawn(self, coroutine: Any, name: str) -> None:
        task: asyncio.Task[None] = asyncio.create_task(coroutine, name=f"webrtc-call-{self.id}-{name}")
        self._helpers.add(task)
        task.add_done_callback(self._helpers.discard)
