"""Where the echo comes when the speaker starts again: how far a learnt echo path moved in time.

The reference of a session's echo canceller plays from the moment its audio
is handed over; a client's playback starts a little off that each time it
starts again (after a barge-in cut the answer off, or after it ran dry): on
loopback, half a 20 ms append either way. A linear path learnt 10 ms off
takes 0-3 dB off instead of 20, and double talk took the echo it left for a
talker: the next reply interrupted itself as it began. The room, and so the
echo's shape, is the same, so :class:`OnsetCheck` compares what the filter
predicts of the first ``CHECK_FRAMES`` of echo with what the microphone
heard: the shift that leaves least of the microphone is how far the path
moved. A reply may start within 200 ms of the cut, while the filter still
predicts the cut answer's tail: the check waits for the new reference to
reach the prediction (checked on that tail, the path stayed 10 ms off and
the reply's echo came through 4 dB louder, taken for a talker).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

MAX_SHIFT_MS = 40  # the furthest a restart is taken to move the echo (two appends of 20 ms)
CHECK_FRAMES = 10  # frames of predicted echo compared with the microphone (100 ms)
GIVE_UP_FRAMES = 100  # no echo predicted this long after the restart (a reply too short): no check
MIN_TOOK_DB = 6.0  # the path moved takes at least this off the compared frames
BETTER_DB = 3.0  # and this much more than where it was
SOUNDING_DBFS = -55.0  # a predicted frame above this holds echo


class OnsetCheck:
    """One check at a time, fed every frame from a restart: the filter's prediction and the microphone."""

    def __init__(self, frame: int, rate: int) -> None:
        self._frame = frame
        self._max_shift = MAX_SHIFT_MS * rate // 1000
        self._predicted: list[npt.NDArray[np.float64]] = []
        self._microphone: list[npt.NDArray[np.float64]] = []
        self._first_sounding: int | None = None  # the frame the predicted echo began at
        self._skip = 0
        self.checking = False

    @property
    def comparing(self) -> bool:
        """The restarted echo is being compared (the new reference has reached the prediction): until that is
        done, the path may be off it."""
        return self.checking and len(self._predicted) >= self._skip

    def start(self, skip: int = 0) -> None:
        """The speaker starts again: compare the next frames, from the ``skip``-th on (before it, the prediction
        is the tail of what played before the speaker stopped, still in the filter: the echo's place is not
        told by it)."""
        self.cancel()
        self._skip = skip
        self.checking = True

    def cancel(self) -> None:
        self._predicted.clear()
        self._microphone.clear()
        self._first_sounding = None
        self.checking = False

    def add(self, predicted: npt.NDArray[np.float64], microphone: npt.NDArray[np.float64]) -> int | None:
        """Take one frame; once the check is done, the samples the echo comes later than the path predicts (0:
        where predicted, or not told)."""
        if not self.checking:
            return None
        self._predicted.append(predicted)
        self._microphone.append(microphone)
        frames = len(self._predicted)
        if self._first_sounding is None:
            floor = self._frame * 10 ** (SOUNDING_DBFS / 10)
            if frames > self._skip and float(np.dot(predicted, predicted)) > floor:
                self._first_sounding = frames - 1
            elif frames >= GIVE_UP_FRAMES:
                self.cancel()
                return 0
            return None
        if frames < self._first_sounding + CHECK_FRAMES + -(-self._max_shift // self._frame):
            return None  # (the microphone is heard up to the largest shift past the compared frames)
        lag = self._lag()
        self.cancel()
        return lag

    def _lag(self) -> int:
        """The shift of the prediction that leaves least of the compared microphone frames, if it takes clearly
        more off than none does (the echo's shape repeats at a voice's pitch: agreement alone is fooled)."""
        assert self._first_sounding is not None
        predicted, microphone = np.concatenate(self._predicted), np.concatenate(self._microphone)
        start, shift = self._first_sounding * self._frame, self._max_shift
        heard = microphone[start:start + CHECK_FRAMES * self._frame]
        padded = np.concatenate([np.zeros(shift), predicted])[start:start + len(heard) + 2 * shift]
        # index i: the prediction moved shift - i samples later, against the same microphone frames
        products = np.correlate(padded, heard, mode="valid")
        energy = np.concatenate([[0.0], np.cumsum(padded * padded)])
        predicted_power = energy[len(heard):] - energy[:-len(heard)]
        heard_power = max(float(np.dot(heard, heard)), 1e-30)
        took = 10 * np.log10(heard_power / np.maximum(heard_power - 2 * products + predicted_power, 1e-30))
        best = int(np.argmax(took))
        if took[best] < MIN_TOOK_DB or took[best] < took[shift] + BETTER_DB:
            return 0
        return shift - best
