"""A linear echo canceller: the microphone less the echo predicted from the reference, and nothing else.

AEC3 (:mod:`speech_to_speech.audio.echo`) ends in a nonlinear suppressor
that, while the user talks over a loud echo, takes 20-45 dB off many of
their frames: the VAD still hears a barge-in, but the STT gets too little of
its words (Whisper read "Thank you." for "Wait."). The signal this module
makes keeps the user whole: it subtracts an estimate of the echo and
suppresses nothing, so what is left of the echo is what the filter has not
learnt yet. :class:`~speech_to_speech.audio.double_talk.DoubleTalk` decides
when it is the better of the two to hear.

The filter is a partitioned-block frequency-domain adaptive filter
(overlap-save, 10 ms partitions, each bin's step normalised by the
reference's power at that bin across the partitions) spanning
``PARTITIONS`` x 10 ms after a bulk delay, which is found by a
phase-transform cross-correlation of the reference and the microphone (the
client's buffer and the room put the echo anywhere up to ``MAX_DELAY_MS``
late). It learns only from frames its caller says hold the echo alone, so
the user's voice does not pull it off the echo path.

Once found, the path is learnt from the window it was found in, so an
answer's first second is cancelled about as well as if the path had been
known from its start. Offline, hibari's voice through the simulated room
(150 ms late, 200 ms tail) at -20 dBFS, the delay found 0.74 s in: 17-25 dB
of echo removed from 0.75 s on, 20-30 dB later (known from the start: 13-23
dB). With the double-talk logic, about 15 ms of one core per second of audio
on top of AEC3's 11-12 (2-core Xeon).

It is learnt again from the last two seconds at the delay's next three looks
(a second apart), keeping the filter it had if that explains them better:
learnt live, a path is 10-20 dB short of what a second more of the answer
teaches at once (offline, one answer: 8-12 dB live 1.3 s in, 25-30 dB so
learnt). The user may be talking in that window: an answer that starts in a
pause of their turn while they go on, as a fast machine starts one. Each
learning leaves out the frames the path explains worst and learns again
without them, and holds every bin's error to what the echo of the reference
there could be: a talker's error, far above the echo where the reference is
quiet, would put a large gain there (learnt whole over a talker as loud as
the echo, the path added 13-18 dB of echo instead of taking any off). A
learning costs about 80 ms of one core (2-core AMD EPYC), up to four times a
path (a path that already takes 20 dB off the window is not learnt again).

When the speaker starts again (the reply to a barge-in), its playback may
start 10-30 ms off where the reference puts it: the path is moved to where
the first echo comes (:mod:`speech_to_speech.audio.echo_onset`), and no
talker is judged by it until then.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.echo_onset import OnsetCheck

PARTITIONS = 16  # 160 ms of the echo path after the bulk delay: the direct path and most of a room's tail
LEAD_FRAMES = 1  # the filter starts this many frames before the found delay (a path a little early is still covered)
STEP = 1.0  # the normalised step: at 1 the error in a frame would be taken out in one step, if alone
MAX_DELAY_MS = 500  # the furthest the echo may come after its reference
WINDOW_S = 2  # seconds of reference and microphone the delay is found from, at most
MIN_SOUNDING_FRAMES = 40  # frames of the window in which the reference sounds, before a look (400 ms of voice)
SOUNDING_DBFS = -50.0  # a reference frame above this has voice in it
FIND_EVERY = 25  # frames between looks for the delay while it is not known (250 ms)
CHECK_EVERY = 100  # and once it is (1 s): a client's buffer seldom changes, and a look costs an FFT of 4 s
CONFIDENT = 8.0  # a correlation peak this many times the mean is taken for the echo's delay
ERROR_BOUND = 0.7  # a bin's error is taken as at most this times the echo its reference could make (the median gain)
CATCH_UP_PASSES = 2  # times a newly found path is learnt from the last seconds (the first answer's start)
CATCH_UP_ROUNDS = 2  # and learnt again from the frames it explains (a user talking left out), this many times
TALK_SUSPECT_DB = 3.0  # a frame the path explains this much worse than the window's median: the user talks there
GAIN_EVERY = 10  # frames between takes of the echo's gain (a median of two seconds moves slowly)
LEARNT_DB = 20.0  # a path that takes this much off the window's echo is not learnt again at a look
RECATCH_LOOKS = 3  # the delay's next looks after a path is found (1 s apart) learn it again from their window
QUIET_DBFS = -60.0  # the step is as small as if the reference were no quieter than this: silence teaches nothing


def _near(delay: int, other: int | None, frame: int) -> bool:
    return other is not None and abs(delay - other) < frame


class DelayFinder:
    """Where the echo comes, in samples after its reference: the phase-transform cross-correlation's peak."""

    def __init__(self, frame: int, rate: int) -> None:
        self._frame = frame
        frames = WINDOW_S * rate // frame
        self._reference: deque[npt.NDArray[np.float64]] = deque(maxlen=frames)
        self._microphone: deque[npt.NDArray[np.float64]] = deque(maxlen=frames)
        self._max_lag = MAX_DELAY_MS * rate // 1000
        self._frames = 0
        self.delay: int | None = None
        self._candidate: int | None = None  # the last look's delay
        self.looks = 0  # looks taken for the delay

    def add(self, reference: npt.NDArray[np.float64], microphone: npt.NDArray[np.float64]) -> int | None:
        """Take one frame of each; the delay, once found."""
        self._reference.append(reference)
        self._microphone.append(microphone)
        self._frames += 1
        every = FIND_EVERY if self.delay is None else CHECK_EVERY
        if self._frames % every == 0 and self._sounding() >= MIN_SOUNDING_FRAMES:
            found = self._find()
            self.looks += 1
            # a known delay moves only when two looks in a row agree: one look over a talker or a stopped
            # answer can peak elsewhere
            if found is not None and (self.delay is None or _near(found, self._candidate, self._frame)):
                self.delay = found
            self._candidate = found
        return self.delay

    def window(self) -> tuple[list[npt.NDArray[np.float64]], list[npt.NDArray[np.float64]]]:
        """The reference's and the microphone's frames the delay is looked for in, oldest first."""
        return list(self._reference), list(self._microphone)

    def _sounding(self) -> int:
        floor = self._frame * 10 ** (SOUNDING_DBFS / 10)
        return sum(float(np.dot(frame, frame)) > floor for frame in self._reference)

    def _find(self) -> int | None:
        reference, microphone = np.concatenate(self._reference), np.concatenate(self._microphone)
        if not reference.any():
            return None
        size = 2 * len(reference)
        cross = np.fft.rfft(microphone, size) * np.conj(np.fft.rfft(reference, size))
        correlation = np.fft.irfft(cross / (np.abs(cross) + 1e-12), size)[: self._max_lag]
        peak = int(np.argmax(correlation))
        mean = float(np.mean(np.abs(correlation))) + 1e-12
        return peak if correlation[peak] >= CONFIDENT * mean else None


def _explained(took: npt.NDArray[np.float64]) -> float:
    """How well a filter explains a window's echo: the dB it takes off the window's better-explained frames (a
    user talking in the rest)."""
    measured = took[np.isfinite(took)]
    return float(np.percentile(measured, 75)) if len(measured) else float("-inf")


class LinearEcho:
    """One microphone's linear canceller, fed every 10 ms frame in order. Not thread-safe: one caller."""

    def __init__(self, frame: int, rate: int) -> None:
        self._frame = frame
        self._delays = DelayFinder(frame, rate)
        self._bulk: int | None = None  # whole frames of reference held back before the filter
        self._found: int | None = None  # the delay finder's delay, as last seen
        self._delay: int | None = None  # the echo's delay the filter is on, in samples (moved at restarts)
        self._onset = OnsetCheck(frame, rate)
        self.paths = 0  # echo paths found so far (a new one is learnt from scratch)
        self._history: deque[npt.NDArray[np.float64]] = deque()
        self._error: npt.NDArray[np.float64] | None = None  # the last frame's, for :meth:`learn`
        # a block's power at each bin, summed over the partitions, for a reference at QUIET_DBFS
        self._floor = PARTITIONS * 2 * frame * 10 ** (QUIET_DBFS / 10)
        bins = frame + 1
        self._spectra = np.zeros((PARTITIONS, bins), np.complex128)  # the reference's last blocks, newest first
        self._weights = np.zeros((PARTITIONS, bins), np.complex128)  # the echo path, one 10 ms piece a row
        self._previous = np.zeros(frame)  # the reference's last frame: the first half of the next block
        self._constrained = 0  # the partition the next update keeps causal
        self._recatch = RECATCH_LOOKS  # looks still to learn the path again at
        self._looks = 0  # the delay finder's looks seen
        # per frame, log10 of the microphone's power over the reference's on the path: its median is the echo's gain
        self._gains: deque[float] = deque(maxlen=WINDOW_S * rate // frame)
        self._power = np.zeros(bins)  # the reference's power at each bin over the partitions, for the last frame
        self._gain: float | None = None  # the echo's gain, the median of ``_gains`` (as of a few frames ago)

    @property
    def ready(self) -> bool:
        """The echo's delay is known: the filter is on it (it may still be learning). Not while a restart's
        echo is checked: the path may have moved. (Until the restarted reference reaches the prediction, it is
        the tail of what played before, on the path as it was.)"""
        return self._bulk is not None and not self._onset.comparing

    @property
    def found(self) -> bool:
        """An echo path was found: the microphone hears the speaker."""
        return self._delays.delay is not None

    def restarted(self) -> None:
        """The speaker starts again after it stopped or ran dry: its playback may start a little off where the
        reference puts it, so the first echo is checked against the path (:mod:`~.echo_onset`)."""
        if self._bulk is not None:
            self._onset.start(skip=self._bulk)  # (the new reference reaches the prediction that many frames on)
            # and the path is learnt again from the window no more: what it holds of the echo before the restart
            # would learn the path back to where it was (live, a reply's echo moved 20 ms was cancelled by 3-5 dB)
            self._recatch = 0

    def process(self, reference: npt.NDArray[np.float32],
                microphone: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The frame's microphone less its predicted echo (before the delay is known, the microphone)."""
        reference64, microphone64 = reference.astype(np.float64), microphone.astype(np.float64)
        delay = self._delays.add(reference64, microphone64)
        moved = delay is not None and delay != self._found
        self._found = delay
        if delay is not None:
            # first found, or a look moved it a frame or more from where the filter is (a client's buffer changed):
            # learn anew
            if self._delay is None or (moved and abs(delay - self._delay) >= self._frame):
                self._bulk = max(0, delay // self._frame - LEAD_FRAMES)
                self._delay = delay
                self.paths += 1
                self._reset()
                self._catch_up()
            elif self._delays.looks != self._looks and self._recatch:
                # a second more of the answer to learn from: a path learnt live from the first, or from a window
                # the user talked in, is 10-20 dB short of what the last seconds teach
                self._recatch -= 1
                self._catch_up(keep_better=True)
            self._looks = self._delays.looks
        self._error = None
        if self._bulk is None:
            return microphone
        self._history.append(reference64)
        if len(self._history) <= self._bulk:
            return microphone
        delayed = self._history.popleft()
        while len(self._history) > self._bulk:
            self._history.popleft()
        predicted = self._predict(delayed)
        self._error = microphone64 - predicted
        self._note_gain(microphone64)
        lag = self._onset.add(predicted, microphone64)
        if lag:
            self._move(lag)
        return self._error.astype(np.float32)

    def _move(self, lag: int) -> None:
        """Move the learnt path ``lag`` samples later (earlier if negative): the echo's shape stays the room's.

        Earlier, the reference is held back fewer frames (those skipped are taken into the blocks now), so that
        the path keeps its lead in the filter; the rest of the move shifts the filter's taps."""
        assert self._delay is not None and self._bulk is not None
        frame = self._frame
        self._delay += lag
        bulk = min(self._bulk, max(0, self._delay // frame - LEAD_FRAMES))
        for _ in range(self._bulk - bulk):
            self._predict(self._history.popleft())
        lag += (self._bulk - bulk) * frame
        self._bulk = bulk
        taps = np.fft.irfft(self._weights, axis=1)[:, :frame].reshape(-1)
        moved = np.zeros_like(taps)
        if lag >= 0:
            moved[lag:] = taps[:len(taps) - lag]
        else:
            moved[:lag] = taps[-lag:]
        blocks = np.zeros((PARTITIONS, 2 * frame))
        blocks[:, :frame] = moved.reshape(PARTITIONS, frame)
        self._weights = np.fft.rfft(blocks, axis=1)

    def _catch_up(self, *, keep_better: bool = False) -> None:
        """Learn the path from the last seconds: the echo of an answer's first second is cancelled about as well
        as if the path had been known from its start.

        The user may be talking in that window (going on with their turn as the answer starts, or talking
        over it): learnt from, their voice pulls the filter off the echo path. So the path is learnt from the
        whole window, each frame is checked against it, and it is learnt again, from scratch, from the frames it
        explains no worse than ``TALK_SUSPECT_DB`` under the window's median frame (twice over).
        ``keep_better``: the filter learnt so far stays if it explains the window's echo better, and is not
        learnt again at all if it takes ``LEARNT_DB`` off it (a learning costs about 80 ms of a core)."""
        references, microphones = self._delays.window()
        references, microphones = references[:-1], microphones[:-1]  # all but this frame, which comes next
        before = self._weights.copy()
        explained_before = _explained(self._took(references, microphones)) if keep_better else None
        if explained_before is not None and explained_before >= LEARNT_DB:
            return  # (the blocks are as a pass over the window leaves them: where the live filter has them)
        chosen: npt.NDArray[np.bool_] | None = None
        history: deque[npt.NDArray[np.float64]] = deque()
        for round_ in range(CATCH_UP_ROUNDS + 1):
            self._zero()
            history = self._learn_window(references, microphones, chosen)
            took = self._took(references, microphones)  # (it leaves the blocks as a pass over the window does)
            measured = np.isfinite(took)
            if round_ == CATCH_UP_ROUNDS or not measured.any():
                break
            chosen = ~(measured & (took < float(np.median(took[measured])) - TALK_SUSPECT_DB))
        if explained_before is not None and explained_before > _explained(took):
            self._weights = before
        self._history = history  # the last pass ended on the frame before this one: the filter is where it would be
        self._error = None

    def _learn_window(self, references: list[npt.NDArray[np.float64]], microphones: list[npt.NDArray[np.float64]],
                      chosen: npt.NDArray[np.bool_] | None) -> deque[npt.NDArray[np.float64]]:
        """``CATCH_UP_PASSES`` passes over the window, learning from its ``chosen`` frames (None: all); the
        reference history as the last pass left it."""
        def learn(index: int, microphone: npt.NDArray[np.float64], error: npt.NDArray[np.float64]) -> None:
            self._error = error
            self._note_gain(microphone)
            if chosen is None or chosen[index]:
                self.learn()

        history: deque[npt.NDArray[np.float64]] = deque()
        for _ in range(CATCH_UP_PASSES):
            history = self._pass(references, microphones, learn)
        return history

    def _took(self, references: list[npt.NDArray[np.float64]],
              microphones: list[npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
        """The dB the filter takes off each frame of the window; NaN where the reference is silent on the path
        or the microphone is quiet."""
        quiet = self._frame * 10 ** (SOUNDING_DBFS / 10)
        took = np.full(len(references), np.nan)

        def measure(index: int, microphone: npt.NDArray[np.float64], error: npt.NDArray[np.float64]) -> None:
            heard = float(np.dot(microphone, microphone))
            if heard > quiet and self._spectra.any():
                took[index] = 10 * np.log10(heard / max(float(np.dot(error, error)), 1e-15))

        self._pass(references, microphones, measure)
        return took

    def _pass(self, references: list[npt.NDArray[np.float64]], microphones: list[npt.NDArray[np.float64]],
              each: Callable[[int, npt.NDArray[np.float64], npt.NDArray[np.float64]], None],
              ) -> deque[npt.NDArray[np.float64]]:
        """The filter run over the window from empty blocks, ``each`` told every frame's index, microphone and
        error; the reference history as the pass leaves it."""
        history: deque[npt.NDArray[np.float64]] = deque(np.zeros(self._frame) for _ in range(self._bulk or 0))
        self._spectra[:] = 0.0
        self._previous = np.zeros(self._frame)
        for index, (reference, microphone) in enumerate(zip(references, microphones, strict=True)):
            history.append(reference)
            each(index, microphone, microphone - self._predict(history.popleft()))
        return history

    def forget(self) -> None:
        """Start learning the path anew where it is (it moved by less than the delay's step, or changed)."""
        self._reset()

    def _note_gain(self, microphone: npt.NDArray[np.float64]) -> None:
        self._power = np.square(np.abs(self._spectra)).sum(axis=0)
        total = float(self._power.sum())
        if total > self._floor * len(self._power):  # the reference sounds on the path
            heard = self._frame * float(np.dot(microphone, microphone))  # its power in a block's bins (Parseval)
            self._gains.append(float(np.log10(max(heard, 1e-15) / total)))
            if len(self._gains) % GAIN_EVERY == 1:
                self._gain = 10 ** float(np.median(self._gains))

    def _bounded(self, error: npt.NDArray[np.complex128]) -> npt.NDArray[np.complex128]:
        """``error`` with each bin held to what the echo of the reference there could be: the user talking over
        an echo the filter does not know yet (as an answer starts) leaves an error far larger than the echo at
        bins where the reference is quiet, and learnt from whole it would put a large gain there."""
        if self._gain is None:
            return error
        bound = ERROR_BOUND * np.sqrt(self._gain * self._power)
        return error * np.minimum(1.0, bound / (np.abs(error) + 1e-12))

    def learn(self) -> None:
        """Adapt the filter to the last frame :meth:`process` took: it was the echo alone."""
        if self._error is None:
            return
        frame = self._frame
        error = self._bounded(np.fft.rfft(np.concatenate([np.zeros(frame), self._error])))
        power = self._power
        self._weights += STEP * np.conj(self._spectra) * error / (power + 1e-2 * power.mean() + self._floor)
        # keep each partition a causal 10 ms piece of the path; one partition a frame is enough (and cheap)
        part = self._constrained
        taps = np.fft.irfft(self._weights[part])
        taps[frame:] = 0.0
        self._weights[part] = np.fft.rfft(taps)
        self._constrained = (part + 1) % PARTITIONS

    def _reset(self) -> None:
        self._onset.cancel()
        self._gains.clear()
        self._gain = None
        self._recatch = RECATCH_LOOKS
        self._zero()

    def _zero(self) -> None:
        self._spectra[:] = 0.0
        self._weights[:] = 0.0
        self._previous = np.zeros(self._frame)
        self._constrained = 0

    def _predict(self, reference: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        self._spectra = np.roll(self._spectra, 1, axis=0)
        self._spectra[0] = np.fft.rfft(np.concatenate([self._previous, reference]))
        self._previous = reference
        return np.fft.irfft((self._spectra * self._weights).sum(axis=0))[self._frame:]
