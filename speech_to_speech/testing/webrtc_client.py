"""An aiortc WebRTC client of the server, for tests: a call as a browser would make it.

``webrtc_call(http_url)`` offers a microphone track and the ``oai-events``
data channel with its ICE candidates stripped (a browser's offer has none: it
trickles them or hides them behind mDNS), gathering on 127.0.0.1 only, and
POSTs it to ``/v1/realtime/calls``. The call then has:

- ``events``: a :class:`RealtimeTestClient` over the data channel, so every
  server event is validated against the GA schema and the usual waits work;
- ``microphone``: a track that sends 20 ms frames at 48 kHz in real time,
  what ``say()`` queued and silence otherwise;
- ``speaker``: the RMS of each 20 ms of the server's audio track as received.

``hang_up()`` sends the ``DELETE``; ``vanish()`` dies without a word, as a
killed browser does. Every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
from aiortc import MediaStreamTrack, RTCConfiguration, RTCDataChannel, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError
from av import AudioFrame

from speech_to_speech.audio.resample import resample
from speech_to_speech.realtime.webrtc.liveness import ice_sockets
from speech_to_speech.realtime.webrtc.media import loopback_candidates
from speech_to_speech.testing.realtime_client import DEFAULT_TIMEOUT, RealtimeTestClient

RATE = 48000
FRAME = RATE // 50
CALLS_PATH = "/v1/realtime/calls"


class MicrophoneTrack(MediaStreamTrack):
    """The caller's voice: queued audio in real-time 20 ms frames, silence when nothing is queued."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self._queued = np.zeros(0, np.float32)
        self._start: float | None = None
        self._pts = 0
        self.drained = asyncio.Event()
        self.drained.set()

    def say(self, samples: npt.NDArray[Any], rate: int = RATE) -> None:
        """Queue float32 audio (at ``rate``) after what is queued."""
        audio = resample(np.asarray(samples, np.float32), rate, RATE)
        self._queued = np.concatenate([self._queued, audio])
        self.drained.clear()

    async def said(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait until everything queued has been sent."""
        await asyncio.wait_for(self.drained.wait(), timeout)

    async def recv(self) -> AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        now = time.monotonic()
        if self._start is None:
            self._start = now
        elif (due := self._start + self._pts / RATE) > now:
            await asyncio.sleep(due - now)
        chunk, self._queued = self._queued[:FRAME], self._queued[FRAME:]
        if not len(self._queued):
            self.drained.set()
        pcm = np.zeros(FRAME, np.int16)
        pcm[: len(chunk)] = (np.clip(chunk, -1, 1) * 32767).astype(np.int16)
        frame = AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = RATE
        frame.pts = self._pts
        frame.time_base = fractions.Fraction(1, RATE)
        self._pts += FRAME
        return frame


class Speaker:
    """What arrives on the server's audio track: the RMS (0..1) of every decoded frame, in order."""

    def __init__(self) -> None:
        self.levels: list[float] = []
        self._changed = asyncio.Condition()

    async def listen(self, track: MediaStreamTrack) -> None:
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            data = frame.to_ndarray().astype(np.float32) / 32768.0  # type: ignore[union-attr]
            async with self._changed:
                self.levels.append(float(np.sqrt(np.mean(np.square(data)))) if data.size else 0.0)
                self._changed.notify_all()

    async def wait(self, predicate: Callable[[list[float]], bool], what: str,
                   timeout: float = DEFAULT_TIMEOUT) -> None:
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: predicate(self.levels)), timeout)
            except TimeoutError:
                recent = ", ".join(f"{level:.3f}" for level in self.levels[-10:])
                raise TimeoutError(f"no {what} within {timeout}s ({len(self.levels)} frames; last: {recent})") from None

    async def wait_for_sound(self, after: int = 0, frames: int = 1, level: float = 0.05,
                             timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait for ``frames`` frames louder than ``level`` from frame ``after`` on; returns the first's index."""
        await self.wait(lambda levels: sum(x > level for x in levels[after:]) >= frames, f"{frames} loud frames",
                        timeout)
        return next(i for i in range(after, len(self.levels)) if self.levels[i] > level)

    async def wait_for_silence(self, frames: int, after: int = 0, level: float = 0.01,
                               timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait for ``frames`` silent frames in a row from frame ``after`` on; returns the first's index."""

        def run_start(levels: list[float]) -> int | None:
            run = 0
            for index in range(after, len(levels)):
                run = run + 1 if levels[index] < level else 0
                if run >= frames:
                    return index - frames + 1
            return None

        await self.wait(lambda levels: run_start(levels) is not None, f"{frames} silent frames", timeout)
        start = run_start(self.levels)
        assert start is not None
        return start


class _ChannelSocket:
    """The part of a websocket that RealtimeTestClient uses, over a data channel."""

    close_code: int | None = None
    transport = None

    def __init__(self, channel: RTCDataChannel) -> None:
        self.channel = channel
        self._messages: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        channel.on("message", self._messages.put_nowait)
        channel.on("close", lambda: self._messages.put_nowait(None))

    async def __aiter__(self) -> AsyncIterator[str | bytes]:
        while (message := await self._messages.get()) is not None:
            yield message

    async def send(self, message: str | bytes) -> None:
        if self.channel.readyState != "open":
            raise ConnectionError(f"the events channel is {self.channel.readyState}")
        self.channel.send(message)

    async def close(self) -> None:
        self.channel.close()


class CallRefused(AssertionError):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"POST {CALLS_PATH} answered {response.status_code}: {response.text[:300]}")
        self.response = response


def strip_candidates(sdp: str) -> str:
    """An offer as a browser sends it: no ICE candidates, no end-of-candidates."""
    lines = [line for line in sdp.splitlines() if not line.startswith(("a=candidate:", "a=end-of-candidates"))]
    return "\r\n".join(lines) + "\r\n"


@dataclass
class WebRTCTestCall:
    pc: RTCPeerConnection
    events: RealtimeTestClient
    microphone: MicrophoneTrack
    speaker: Speaker
    answer: httpx.Response  # the 201 with the SDP answer
    http: httpx.AsyncClient

    @property
    def location(self) -> str:
        return str(self.answer.headers["location"])

    async def hang_up(self) -> httpx.Response:
        return await self.http.delete(self.location)

    def vanish(self) -> None:
        """Die as a killed browser does: every ICE socket is gone at once and nothing more is sent.

        Not a DELETE, a data-channel close, DTLS close_notify or SCTP abort: what
        the client's aiortc tries to send afterwards goes nowhere.
        """
        sockets = list(ice_sockets(self.pc))
        assert sockets, "the call has no ICE socket to close"
        for protocol in sockets:
            protocol.transport.abort()


@contextlib.asynccontextmanager
async def webrtc_call(http_url: str, *, session: dict[str, Any] | None = None, timeout: float = DEFAULT_TIMEOUT,
                      allowed_extra: tuple[str, ...] = (), audio: bool = True) -> AsyncIterator[WebRTCTestCall]:
    """A connected call (its events channel open) to the server at ``http_url``; closed on exit.

    ``session`` sends the offer as OpenAI's multipart form with that initial session; ``audio=False``
    offers the events channel alone (no RTP either way).
    """
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    microphone = MicrophoneTrack()
    speaker = Speaker()
    listeners: list[asyncio.Task[None]] = []
    if audio:
        pc.addTrack(microphone)
    pc.on("track", lambda track: listeners.append(asyncio.create_task(speaker.listen(track))))
    channel = pc.createDataChannel("oai-events")
    socket = _ChannelSocket(channel)
    opened = asyncio.Event()
    channel.on("open", opened.set)
    async with httpx.AsyncClient(base_url=http_url, timeout=timeout) as http:
        try:
            with loopback_candidates(only=True):
                await pc.setLocalDescription(await pc.createOffer())
            offer = strip_candidates(pc.localDescription.sdp)
            if session is None:
                response = await http.post(CALLS_PATH, content=offer, headers={"Content-Type": "application/sdp"})
            else:
                response = await http.post(CALLS_PATH, files={"sdp": (None, offer),
                                                              "session": (None, json.dumps(session))})
            if response.status_code != 201:
                raise CallRefused(response)
            await pc.setRemoteDescription(RTCSessionDescription(sdp=response.text, type="answer"))
            await asyncio.wait_for(opened.wait(), timeout)
            events = RealtimeTestClient(socket, timeout=timeout, allowed_extra=allowed_extra)  # type: ignore[arg-type]
            call = WebRTCTestCall(pc, events, microphone, speaker, response, http)
            try:
                yield call
            finally:
                await events.close()
            events.raise_violations()
        finally:
            for task in listeners:
                task.cancel()
            microphone.stop()
            await asyncio.wait_for(pc.close(), timeout)
