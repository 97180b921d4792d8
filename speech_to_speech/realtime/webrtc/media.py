"""WebRTC media (aiortc): the track that plays the pipeline's audio, the pump that hears the caller's, loopback ICE.

Outbound, :class:`PlayoutTrack` is the session's ``MediaTrack``: ``play``
queues 24 kHz PCM16 as the pipeline makes it, and aiortc's sender pulls a
20 ms frame (960 samples at 48 kHz, mono) from ``recv`` at the pace of the wall
clock, silence when nothing is queued. Resampling to 48 kHz happens there, 20
ms at a time and statefully (about 20 µs of soxr per frame on the event loop;
aiortc encodes Opus in an executor). The queue holds what a response produced
and has not been played yet, so its memory is bounded only by the response:
TTS runs faster than real time, and a long answer waits here, not on the wire.

Inbound, :class:`InputPump` reads the caller's track. aiortc decodes Opus in its
own thread; the pump converts each decoded 48 kHz frame to mono 16 kHz float32
in an executor thread (a stateful resampler, one frame at a time, so order and
state need no lock) and hands it to the session on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fractions
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import aioice.ice
import numpy as np
import numpy.typing as npt
from aiortc import MediaStreamTrack
from aiortc.mediastreams import MediaStreamError
from av import AudioFrame

from speech_to_speech.audio.rates import PIPELINE_RATE, TTS_RATE
from speech_to_speech.audio.resample import StreamResampler, to_int16
from speech_to_speech.audio.samples import FloatAudio, Int16Audio

log = logging.getLogger(__name__)

RTP_RATE = 48000
FRAME_SAMPLES = RTP_RATE // 50  # 20 ms
TIME_BASE = fractions.Fraction(1, RTP_RATE)
# A sender this far behind the wall clock (a stalled loop) starts again from now instead of bursting.
MAX_LAG_S = 0.2


class PlayoutTrack(MediaStreamTrack):
    """The assistant's voice as a WebRTC audio track; implements ``MediaTrack``."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self._queued: deque[Int16Audio] = deque()  # 24 kHz chunks not yet played
        self._resampler: StreamResampler | None = None
        self._out: Int16Audio = np.zeros(0, np.int16)  # 48 kHz, resampled and not yet sent
        self._listener: Callable[[int], None] | None = None
        self._start: float | None = None
        self._pts = 0

    # ------------------------------------------------------------ MediaTrack

    def play(self, samples: Int16Audio) -> None:
        if len(samples):
            self._queued.append(np.asarray(samples, dtype=np.int16))

    def clear(self) -> None:
        self._queued.clear()
        self._resampler = None
        self._out = np.zeros(0, np.int16)

    def set_play_listener(self, listener: Callable[[int], None] | None) -> None:
        self._listener = listener

    # ------------------------------------------------------------ aiortc

    async def recv(self) -> AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        await self._pace()
        samples = self._next_frame()
        frame = AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = RTP_RATE
        frame.pts = self._pts
        frame.time_base = TIME_BASE
        self._pts += FRAME_SAMPLES
        return frame

    async def _pace(self) -> None:
        now = time.monotonic()
        if self._start is None:
            self._start = now
            return
        due = self._start + self._pts / RTP_RATE
        if due > now:
            await asyncio.sleep(due - now)
        elif now - due > MAX_LAG_S:
            self._start = now - self._pts / RTP_RATE

    def _next_frame(self) -> Int16Audio:
        """The next 960 samples at 48 kHz: queued audio, then silence; tells the listener what it took."""
        taken = 0
        while len(self._out) < FRAME_SAMPLES:
            need = (FRAME_SAMPLES - len(self._out) + 1) // 2
            chunk = self._take(need)
            if chunk is None:
                if self._resampler is not None:  # the queue ran dry: the resampler's tail ends this stretch
                    self._out = np.concatenate([self._out, to_int16(self._resampler.flush())])
                    self._resampler = None
                break
            taken += len(chunk)
            if self._resampler is None:
                self._resampler = StreamResampler(TTS_RATE, RTP_RATE)
            self._out = np.concatenate([self._out, to_int16(self._resampler.process(chunk))])
        frame, self._out = self._out[:FRAME_SAMPLES], self._out[FRAME_SAMPLES:]
        if len(frame) < FRAME_SAMPLES:
            frame = np.concatenate([frame, np.zeros(FRAME_SAMPLES - len(frame), np.int16)])
        if taken and self._listener is not None:
            try:
                self._listener(taken)
            except Exception:  # a ledger bug must not stop aiortc's sender (and the call's audio)
                log.exception("play listener failed")
        return frame

    def _take(self, count: int) -> Int16Audio | None:
        if not self._queued:
            return None
        head = self._queued[0]
        if len(head) <= count:
            return self._queued.popleft()
        self._queued[0] = head[count:]
        return head[:count]


class InputPump:
    """The caller's audio track -> 16 kHz float32 for ``sink`` (called on the event loop)."""

    def __init__(self, track: MediaStreamTrack, sink: Callable[[FloatAudio], None]) -> None:
        self._track = track
        self._sink = sink
        self._resampler: StreamResampler | None = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                frame = await self._track.recv()
            except MediaStreamError:
                return
            try:
                samples = await loop.run_in_executor(None, self._convert, frame)
            except Exception:  # one bad frame must not deafen the call
                log.exception("an inbound audio frame could not be converted")
                continue
            if len(samples):
                self._sink(samples)

    def _convert(self, frame: Any) -> FloatAudio:
        """A decoded frame (any rate, channels, sample format) -> mono float32 at 16 kHz (executor thread)."""
        data: npt.NDArray[Any] = frame.to_ndarray()
        channels = len(frame.layout.channels)
        if frame.format.is_planar:
            mono = data.astype(np.float32).mean(axis=0)
        else:
            mono = data.reshape(-1, channels).astype(np.float32).mean(axis=1)
        if data.dtype == np.int16:
            mono /= 32768.0
        rate = int(frame.sample_rate)
        if self._resampler is None or self._resampler.in_rate != rate:
            self._resampler = StreamResampler(rate, PIPELINE_RATE)
        return self._resampler.process(mono)


# ---------------------------------------------------------------- loopback ICE

# None: aioice's own host addresses; "add": and 127.0.0.1; "only": 127.0.0.1 alone (a test client).
_GATHER_LOOPBACK: contextvars.ContextVar[str | None] = contextvars.ContextVar("s2s_gather_loopback", default=None)
_delegate: Callable[[bool, bool], list[str]] | None = None


def _host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
    assert _delegate is not None
    mode = _GATHER_LOOPBACK.get()
    if mode is None:
        return _delegate(use_ipv4, use_ipv6)
    addresses = [] if mode == "only" else list(_delegate(use_ipv4, use_ipv6))
    if use_ipv4 and "127.0.0.1" not in addresses:
        addresses.append("127.0.0.1")
    return addresses


@contextlib.contextmanager
def loopback_candidates(only: bool = False) -> Iterator[None]:
    """ICE gathering inside this block also offers a 127.0.0.1 host candidate (``only``: no other).

    aioice leaves loopback out of its host candidates, so a browser on the same
    machine (whose offer carries no candidates: it trickles them, or hides them
    behind mDNS) could find nothing to check against where loopback is the only
    interface. Only gathering in this context (the server's answer) changes;
    other aiortc peers in the process gather as before.
    """
    global _delegate
    if aioice.ice.get_host_addresses is not _host_addresses:
        _delegate = aioice.ice.get_host_addresses
        aioice.ice.get_host_addresses = _host_addresses
    token = _GATHER_LOOPBACK.set("only" if only else "add")
    try:
        yield
    finally:
        _GATHER_LOOPBACK.reset(token)
