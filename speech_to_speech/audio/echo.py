"""Echo cancellation: the microphone's signal with the assistant's own voice taken out.

The canceller is WebRTC's audio processing (AEC3, and a high-pass filter),
as the ``livekit`` package binds it. It needs two streams on one clock: what
the speaker plays (the *reference*, :meth:`EchoCanceller.played`) and what
the microphone hears (:meth:`EchoCanceller.cancel`). Both are cut into 10 ms
frames; for every microphone frame one reference frame is consumed, so the
reference is taken to play from the moment it is handed over, at real time,
and silence when none is left. Whatever lies between that moment and the
sound reaching the microphone (a client's playback buffer, the device, the
room) is found by AEC3's own delay estimator, which covers some hundreds of
milliseconds; ``delay_hint_ms`` is where it starts looking.

AEC3's suppressor takes much of a user off who talks over a loud echo, so a
linear canceller runs beside it (:mod:`speech_to_speech.audio.linear_echo`),
and in double talk (:mod:`speech_to_speech.audio.double_talk`) the microphone
is heard through that instead: the user whole, the echo 15-30 dB down. A
microphone that hears no echo at all (headphones) is heard as it is
(:mod:`speech_to_speech.audio.no_echo`).

Measured on the five benchmark questions at 16 kHz, through a simulated room
(a direct path at half amplitude and a 200 ms reverberation tail, 50-300 ms
late): 38-40 dB of echo removed after the first two seconds, a talker over
the echo kept within 3 dB, and about 13 ms of one core per second of audio.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from speech_to_speech.audio.double_talk import ACTIVE_DB, DoubleTalk, FrameLevels
from speech_to_speech.audio.held_output import HeldFrame, HeldOutput, Source
from speech_to_speech.audio.linear_echo import LinearEcho
from speech_to_speech.audio.no_echo import NoEcho
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.residual_echo import ResidualEchoSuppressor, level_db

FRAME_MS = 10  # the only frame length WebRTC's audio processing takes
TAIL_FRAMES = 60  # the reference counts as sounding this long after it played: its way to the mic and the room
MISSING = "echo cancellation needs the livekit package: pip install 'livekit>=1.1'"
_SCALE = 32767.0


def _module(noise_suppression: bool) -> tuple[Any, Any]:
    try:
        from livekit import rtc
    except ImportError as error:
        raise RuntimeError(MISSING) from error
    return rtc, rtc.AudioProcessingModule(echo_cancellation=True, noise_suppression=noise_suppression,
                                          high_pass_filter=True)


def _pcm16(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1.0, 1.0) * _SCALE).astype(np.int16).tobytes()


class EchoCanceller:
    """One microphone and its speaker (one session, or one device pair). Not thread-safe: one caller."""

    def __init__(self, rate: int = PIPELINE_RATE, *, noise_suppression: bool = False,
                 delay_hint_ms: int = 0) -> None:
        if rate % (1000 // FRAME_MS):
            raise ValueError(f"echo cancellation takes rates in whole {FRAME_MS} ms frames, not {rate} Hz")
        self.rate = rate
        self._frame = rate * FRAME_MS // 1000
        self._rtc, self._apm = _module(noise_suppression)
        self._apm.set_stream_delay_ms(delay_hint_ms)
        self._reference: list[np.ndarray] = []  # what is still to play, in order
        self._reference_len = 0
        self._starved = 0
        self._dry = True  # the last frame had nothing of the reference: the speaker is not playing
        self._near = np.zeros(0, np.float32)  # microphone samples short of a whole frame
        self._silence = np.zeros(self._frame, np.float32)
        self._residual = ResidualEchoSuppressor()  # what AEC3 lets through now and then
        self._linear = LinearEcho(self._frame, rate)  # the user kept whole in double talk
        self._double_talk = DoubleTalk()
        self._sounding: deque[float] = deque([-90.0] * TAIL_FRAMES, TAIL_FRAMES)  # the reference's last levels
        self._no_echo = NoEcho()
        self._heard: Source = "aec"  # what the last frame was heard through
        self._output = HeldOutput(self._frame)  # a few frames late while the assistant speaks

    @property
    def double_talk(self) -> bool:
        """The microphone is heard through the linear canceller now (someone talks over the echo)."""
        return self._heard == "linear"

    @property
    def output_delay(self) -> int:
        """How many samples later than its microphone input the output now runs (beyond a partial frame)."""
        return self._output.delay_frames * self._frame

    @property
    def pending_reference(self) -> int:
        """How much of the reference is still to play (what the speaker has queued), in samples."""
        return self._reference_len

    @property
    def pending_reference_ms(self) -> int:
        return self._reference_len * 1000 // self.rate

    @property
    def starved(self) -> int:
        """Samples of silence taken as the reference since it last ran out (0 while it has some)."""
        return self._starved

    def played(self, samples: np.ndarray) -> None:
        """The speaker plays ``samples`` (float32 at ``rate``) after what it already has queued."""
        if len(samples):
            self._reference.append(np.asarray(samples, np.float32))
            self._reference_len += len(samples)
            self._starved = 0

    def set_delay_hint_ms(self, delay_ms: int) -> None:
        """Where the delay estimator starts looking: the path from a handed-over frame to the microphone."""
        self._apm.set_stream_delay_ms(max(0, delay_ms))

    def drop_reference(self, samples: int) -> None:
        """Forget the oldest ``samples`` of the reference (it played before the microphone heard it)."""
        if samples > 0 and self._reference:
            self._moved()
        while samples > 0 and self._reference:
            head = self._reference[0]
            cut = min(len(head), samples)
            if cut == len(head):
                self._reference.pop(0)
            else:
                self._reference[0] = head[cut:]
            self._reference_len -= cut
            samples -= cut

    def delay_reference(self, samples: int) -> None:
        """Play the reference ``samples`` later than queued (silence first): it was handed over early."""
        if samples > 0 and self._reference:
            self._reference.insert(0, np.zeros(samples, np.float32))
            self._reference_len += samples
            self._moved()

    def _moved(self) -> None:
        """The reference moved against the microphone: the linear canceller's path no longer holds (AEC3's
        delay estimator follows on its own)."""
        self._linear.forget()
        self._double_talk.forget()

    def stop_playing(self) -> None:
        """The speaker dropped what it had queued (a reply cut off): no more echo of it to expect."""
        self._reference.clear()
        self._reference_len = 0
        self._dry = True
        self._double_talk.stopped()

    def cancel(self, samples: np.ndarray) -> np.ndarray:
        """The microphone's ``samples`` with the echo removed: as many samples as whole frames came in,
        so the output runs up to one frame (10 ms) behind the input, and while the assistant speaks up to
        ``held_output.HELD_FRAMES`` more (:mod:`speech_to_speech.audio.held_output`)."""
        near = np.concatenate([self._near, np.asarray(samples, np.float32)])
        whole = len(near) - len(near) % self._frame
        self._near = near[whole:]
        out = np.empty(whole, np.float32)
        for start in range(0, whole, self._frame):
            reference = self._next_reference()
            self._apm.process_reverse_stream(self._frame_of(reference))
            microphone = near[start:start + self._frame]
            frame = self._frame_of(microphone, writable=True)
            self._apm.process_stream(frame)
            cancelled = (np.frombuffer(frame.data, np.int16) / _SCALE).astype(np.float32)
            suppressed = self._residual.process(reference, microphone, cancelled)
            out[start:start + self._frame] = self._choose(reference, microphone, suppressed)
        return out

    def _choose(self, reference: np.ndarray, microphone: np.ndarray, suppressed: np.ndarray) -> np.ndarray:
        """AEC3's output, or in double talk the linear canceller's (the user whole); a frame's fade between."""
        paths = self._linear.paths
        linear = self._linear.process(reference, microphone)
        if self._linear.paths != paths:  # a new path: what was measured of the old one says nothing of it
            self._double_talk.forget()
        playing_db = level_db(reference)
        self._sounding.append(playing_db)
        reference_db, microphone_db = max(self._sounding), level_db(microphone)
        verdict = self._double_talk.update(FrameLevels(
            reference_db=reference_db, microphone_db=microphone_db,
            aec_db=level_db(suppressed), linear_db=level_db(linear), linear_ready=self._linear.ready))
        if verdict.lost:
            self._linear.forget()  # (the double-talk state forgot with it)
        elif verdict.adapt:
            self._linear.learn()
        # headphones: AEC3 would take the user off with an echo that is not there
        echo_found = self._linear.found and self._double_talk.explains_echo  # (not a voice like the assistant's)
        no_echo = self._no_echo.update(playing_db, reference_db, microphone_db, echo_found=echo_found)
        was, self._heard = self._heard, "microphone" if no_echo else "linear" if verdict.linear else "aec"
        if self._heard == "linear" and was != "linear":
            self._output.reach_back("linear")  # the talker's first frames, which AEC3 would take off
        frame = HeldFrame({"microphone": microphone, "linear": linear, "aec": suppressed}, self._heard)
        return self._output.send(frame, hold=reference_db >= ACTIVE_DB or self._heard == "linear")

    def _next_reference(self) -> np.ndarray:
        frame, needed = [], self._frame
        while needed and self._reference:
            head = self._reference[0]
            take = head[:needed]
            frame.append(take)
            needed -= len(take)
            if len(take) == len(head):
                self._reference.pop(0)
            else:
                self._reference[0] = head[len(take):]
        self._reference_len -= self._frame - needed
        self._starved += needed
        if frame and self._dry:
            self._linear.restarted()  # (a client's playback starts a little off where the reference puts it)
        self._dry = not frame
        if not frame:
            return self._silence
        if needed:
            frame.append(self._silence[:needed])
        return np.concatenate(frame)

    def _frame_of(self, samples: np.ndarray, writable: bool = False) -> Any:
        data = _pcm16(samples)
        return self._rtc.AudioFrame(bytearray(data) if writable else data, self.rate, 1, self._frame)
