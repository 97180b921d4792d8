"""Echo cancellation on the server: a session's microphone audio with the audio the session sent taken out.

A client that streams a raw microphone beside its own speaker (a robot, a
kiosk, a script) sends back the assistant's voice; heard as the user, it
starts a turn over the answer and gets answered. The server is the one party
that knows exactly what the assistant said, so it can take it out before the
VAD, the turn detector and the STT hear anything.

It is on for a session when the server runs with ``--echo_cancellation
server``, or when the session asks for it with the extension
``speech_to_speech.echo_cancellation`` in ``session.update``'s
``session.extensions``. It is never on for a WebRTC session: the browser
cancels echo on its own track before the audio is sent (``getUserMedia``'s
``echoCancellation``), and a second canceller would only distort it.

The reference is every audio chunk the session sends, taken to play from
the moment it is sent, after what was sent before it (the send clock), and
dropped when the client stops playing (a reply cut off, or
``conversation.item.truncate``). A client's playback buffer delays
the real sound; the canceller's delay estimator finds that lag.

The reference is resampled to the pipeline's rate as a stream, and the
resampler holds back the last 8-35 ms of what it was given. When the
speaker runs dry (the next clause comes later than the last one takes to
play: a loaded machine), that held tail belongs to the audio that already
played; handed over with the next chunk, it would start the next run up to
35 ms late, and AEC3 loses the echo path it had found for a second or more
(offline, the first half second after such a restart: 8 dB of echo removed
instead of 45). So it is counted as played and left out.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from functools import cache

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.echo import EchoCanceller
from speech_to_speech.audio.rates import PIPELINE_RATE, TTS_RATE
from speech_to_speech.audio.resample import StreamResampler
from speech_to_speech.realtime.conversation.mic_clock import MicClock

# How far the reference may run ahead of what an ack says is playing before it is held back: the echo
# comes later than its reference anyway (the room, the devices), and the canceller finds that much.
AHEAD_TOLERANCE_MS = 120
# How far it may run behind before it is moved on. Acks are counted in whole appends (20 ms) and the
# canceller takes whole 10 ms frames, so the two disagree by that much with nothing wrong; moving the
# reference for it would shift the echo path AEC3 has found on every other ack.
BEHIND_TOLERANCE_MS = 30


@cache
def echo_cancellation_available() -> bool:
    """The canceller's library is installed (a dependency, but a slimmed install may lack it)."""
    return importlib.util.find_spec("livekit") is not None


class SessionEcho:
    """The echo canceller of one session, built the first time the session needs it."""

    def __init__(self, wanted: Callable[[], bool], *,
                 on_cancelled: Callable[[float, float], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``on_cancelled``: told the seconds of microphone audio each call cancelled and the CPU seconds
        it took (the server's metrics); ``clock``: the wall clock the microphone streams against."""
        self._wanted = wanted  # read per call: a session.update may turn it on or off
        self._on_cancelled = on_cancelled
        self._canceller: EchoCanceller | None = None
        self._reference = StreamResampler(TTS_RATE, PIPELINE_RATE)
        self._handed = 0  # reference samples handed to the canceller
        self._stale = 0  # resampler output still to come that belongs to audio played before a gap
        self._item_starts: dict[str, int] = {}  # where each assistant item's audio starts in the reference
        self._mic = MicClock(PIPELINE_RATE, clock)
        # a reply's reference held back while the microphone's audio of the time before it waits still: handed
        # over once that much more is taken (a reference sample, counted as handed, at each of those)
        self._held: list[npt.NDArray[np.float32]] = []
        self._release_at = 0  # the microphone sample it is handed over at

    @property
    def active(self) -> bool:
        return self._wanted()

    @property
    def playing(self) -> bool:
        """Whether the canceller has the assistant's audio playing (reference still to be matched)."""
        return self._canceller is not None and self.active and (self._canceller.pending_reference > 0
                                                                 or bool(self._held))

    @property
    def _held_samples(self) -> int:
        return sum(len(chunk) for chunk in self._held)

    def heard(self, samples_16k: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The microphone's audio as the pipeline should hear it."""
        if not self.active:
            return samples_16k
        started = time.thread_time()
        canceller = self._ensure()
        split = min(len(samples_16k), max(0, self._release_at - self._mic.taken)) if self._held else len(samples_16k)
        cancelled = canceller.cancel(samples_16k[:split])
        if split < len(samples_16k):  # the reference held back starts playing here
            held, self._held = self._held, []
            canceller.played(np.concatenate(held))
            cancelled = np.concatenate([cancelled, canceller.cancel(samples_16k[split:])])
        self._mic.took(len(samples_16k))
        if self._on_cancelled is not None:
            self._on_cancelled(len(samples_16k) / PIPELINE_RATE, time.thread_time() - started)
        return cancelled

    def sent(self, samples: npt.NDArray[np.int16], item_id: str) -> None:
        """An audio chunk of ``item_id`` (pipeline output, at the TTS rate) went to the client to play."""
        if not self.active:
            return
        canceller = self._ensure()
        queued = canceller.pending_reference + self._held_samples
        if queued == 0 and not self._stale:  # the speaker ran dry
            # what the resampler held back played while the canceller took silence for the reference
            self._stale = min(self._reference.held, canceller.starved)
            self._handed += self._stale
        if queued == 0:
            # the speaker starts again now: where the microphone is, which the canceller may not have got to (the
            # microphone's audio of the time before waits still, behind a held event loop): handed over there
            self._release_at = self._mic.taken + self._mic.waiting()
        self._item_starts.setdefault(item_id, self._handed)  # played after what is queued
        reference = self._reference.process(samples.astype(np.float32) / 32768.0)
        skipped = min(self._stale, len(reference))
        self._stale -= skipped
        self._queue(reference[skipped:])
        self._handed += len(reference) - skipped

    def _queue(self, reference: npt.NDArray[np.float32]) -> None:
        """``reference`` to play after what is queued (held back while the microphone's audio before it waits)."""
        if self._held or self._release_at > self._mic.taken:
            self._held.append(reference)
        else:
            self._ensure().played(reference)

    def acked(self, item_id: str | None, played_ms: int) -> None:
        """The client says it has played ``played_ms`` of ``item_id``, as of the audio it sent so far."""
        if self._canceller is None or item_id not in self._item_starts:
            return
        playing = self._item_starts[item_id] + played_ms * PIPELINE_RATE // 1000
        head = self.reference_position
        if playing - head > BEHIND_TOLERANCE_MS * PIPELINE_RATE // 1000:
            self._canceller.drop_reference(playing - head)  # the client is further on than the send clock says
        elif head - playing > AHEAD_TOLERANCE_MS * PIPELINE_RATE // 1000:
            self._canceller.delay_reference(head - playing)  # it buffers more than the canceller would find

    @property
    def reference_position(self) -> int:
        """The reference sample (counted from the session's first) the next microphone frame is matched with."""
        pending = self._canceller.pending_reference if self._canceller is not None else 0
        return self._handed - pending - self._held_samples

    def stopped(self) -> None:
        """The client stopped playing what it was sent."""
        if self._canceller is not None:
            self._handed -= self._canceller.pending_reference + self._held_samples
            self._held, self._release_at = [], 0
            self._canceller.stop_playing()

    def _ensure(self) -> EchoCanceller:
        if self._canceller is None:
            self._canceller = EchoCanceller(PIPELINE_RATE)
        return self._canceller
