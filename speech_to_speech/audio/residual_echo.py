"""What AEC3 lets through: frames of the canceller's output that are still the assistant's voice, turned down.

AEC3 (:mod:`speech_to_speech.audio.echo`) suppresses hard while it is new,
then trusts a linear filter that may not have converged, and can lose the
echo for a moment after the speaker was silent: on a session's first
answers a burst of 100-300 ms of echo sometimes comes through nearly whole,
1.5-2.5 s into an answer or half a second after a pause in it. Offline, six
answers through three rooms with the second clause 300 ms late: 11 of 18
fresh cancellers let a 100 ms window above -55 dBFS through, the worst at
-27 dBFS with the echo itself at -26 to -37 dBFS. The VAD takes such a burst
for the user; the quiet bench saw it start a user turn in 2 of 30 answers.
With this suppressor the worst window of those 18 was -49 dBFS, and 12
windows were above -55 dBFS instead of 35; a user talking over the echo
lost 1.2-6.2 dB of their level (AEC3 alone: 1.0-3.3).

This suppressor watches three levels per 10 ms frame: what the speaker
played (the reference), what the microphone heard and what AEC3 left. From
the frames AEC3 clearly cancelled (echo alone at the microphone) it learns
where the echo comes (the lag of the microphone's level behind the
reference's, from their correlation) and how loud it is against its
reference. A frame is a leak when AEC3 took less than ``LEAK_DB`` off a
microphone that is no louder than the echo its reference predicts: it is
brought down to ``FLOOR_DB`` under the microphone, as if AEC3 had it. A microphone louder than
the prediction by ``TALK_DB`` has someone talking over the echo, and passes
as AEC3 left it, so a real barge-in is heard.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

MAX_LAG = 50  # frames: the echo comes up to 500 ms after its reference (a client's buffer, the room)
TAIL = 8  # frames: a reference frame still sounds this long (the room's reverberation)
HISTORY = 300  # frames: the levels the lag and the loudness are learnt from (3 s)
ACTIVE_DB = -55.0  # a reference frame above this is the assistant speaking
CANCELLED_DB = 15.0  # AEC3 took this much off: the microphone held echo alone
LEAK_DB = 20.0  # AEC3 took less than this off echo it should have cancelled
TALK_DB = 3.0  # the microphone is this much louder than the echo alone: someone talks over it
FLOOR_DB = 30.0  # how far under the microphone a leaked frame is brought: what AEC3 takes off when it has the echo
MIN_CORRELATION = 0.5  # below it the lag is not trusted (too little of the assistant's voice so far)
_SILENT_DB = -90.0


def level_db(frame: npt.NDArray[np.float32]) -> float:
    return max(_SILENT_DB, float(10 * np.log10(np.mean(np.square(frame, dtype=np.float64)) + 1e-12)))


class ResidualEchoSuppressor:
    """One canceller's: fed every frame in order, with its reference, microphone and AEC3 output."""

    def __init__(self) -> None:
        self._reference: deque[float] = deque([_SILENT_DB] * (HISTORY + MAX_LAG + TAIL), HISTORY + MAX_LAG + TAIL)
        self._microphone: deque[float] = deque([_SILENT_DB] * HISTORY, HISTORY)
        self._cancelled: deque[bool] = deque([False] * HISTORY, HISTORY)  # AEC3 clearly removed echo there
        self._frames = 0
        self.lag: int | None = None  # frames from a reference frame to its echo, once known
        self.gain_db: float | None = None  # the echo's level against its reference's, once known

    def process(self, reference: npt.NDArray[np.float32], microphone: npt.NDArray[np.float32],
                output: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``output`` (AEC3's for this frame), turned down if it is echo that AEC3 let through."""
        reference_db, microphone_db, output_db = level_db(reference), level_db(microphone), level_db(output)
        self._reference.append(reference_db)
        self._microphone.append(microphone_db)
        self._cancelled.append(microphone_db - output_db >= CANCELLED_DB)
        self._frames += 1
        if self._frames % 50 == 0:  # every half second
            self._learn()
        predicted = self._predicted_echo_db()
        if predicted is None or microphone_db > predicted + TALK_DB or microphone_db - output_db >= LEAK_DB:
            return output
        target_db = microphone_db - FLOOR_DB
        if output_db <= target_db:
            return output
        return (output * 10 ** ((target_db - output_db) / 20)).astype(np.float32)

    def _heard(self) -> npt.NDArray[np.float64]:
        """The reference's level still sounding at each frame: the loudest of the last ``TAIL`` (the room's
        tail). Entry ``i`` is for the frame ``TAIL - 1`` after the reference history's ``i``-th."""
        levels = np.asarray(self._reference, np.float64)
        return np.lib.stride_tricks.sliding_window_view(levels, TAIL).max(axis=1)

    @staticmethod
    def _through(heard: npt.NDArray[np.float64], lag: int) -> npt.NDArray[np.float64]:
        """What each microphone frame of the history hears of the reference through ``lag``."""
        end = len(heard) - lag
        return heard[end - HISTORY:end]

    def _predicted_echo_db(self) -> float | None:
        if self.lag is None or self.gain_db is None:
            return None
        end = len(self._reference) - self.lag
        heard = max(self._reference[end - 1 - k] for k in range(TAIL))
        return None if heard < ACTIVE_DB else heard + self.gain_db

    def _learn(self) -> None:
        microphone = np.asarray(self._microphone, np.float64)
        cancelled = np.asarray(self._cancelled, bool)
        sounding = self._heard()
        # Every lag at once: row ``lag`` is what the history heard through it, and where that was echo alone.
        heard = np.stack([self._through(sounding, lag) for lag in range(MAX_LAG + 1)])
        echo_alone = cancelled & (heard >= ACTIVE_DB)
        counts = echo_alone.sum(axis=1)
        usable = counts >= 30
        if not usable.any():
            return
        n = np.maximum(counts, 1)
        x = np.where(echo_alone, heard, 0.0)
        y = np.where(echo_alone, microphone, 0.0)
        x_mean, y_mean = x.sum(axis=1) / n, y.sum(axis=1) / n
        dx = np.where(echo_alone, heard - x_mean[:, None], 0.0)
        dy = np.where(echo_alone, microphone - y_mean[:, None], 0.0)
        spread = np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            correlation = np.where(usable & (spread > 0), (dx * dy).sum(axis=1) / spread, -1.0)
        best_lag = int(np.argmax(correlation))
        if correlation[best_lag] <= MIN_CORRELATION:
            return
        alone = echo_alone[best_lag]
        self.lag = best_lag
        # The loud end of the echo against its reference: a frame's echo is never louder than this.
        self.gain_db = float(np.percentile(microphone[alone] - heard[best_lag][alone], 90))
