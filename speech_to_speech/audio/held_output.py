"""The echo canceller's output held back a few frames while the assistant speaks.

A talker over the echo is told apart only after ``TALK_FRAMES`` of them
(:mod:`speech_to_speech.audio.double_talk`): until then the microphone is
heard through AEC3, whose suppressor takes the talker's first syllable off
with the echo. Live, a short "Wait." over an echo 6 dB louder than the user
lost its first 40 ms that way and fell under the voice a turn needs. So
while the assistant speaks, each frame's outputs wait ``HELD_FRAMES`` before
one is chosen; a double-talk call reaches back over the frames still held
and has them heard through the linear canceller as well.

The delay is taken on and given back only on quiet frames (a pause, the
echo suppressed, the room's floor), so that no word is stretched or cut:
a quiet frame is sent twice to take it on, and one is left out to give it
back once the assistant has been silent a while. Outside an answer, then,
the output runs as early as without holding; within one, up to
``HELD_FRAMES`` later (the end of a barge-in is heard that much later).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

import numpy as np

from speech_to_speech.audio.residual_echo import level_db

Source = Literal["microphone", "linear", "aec"]
HELD_FRAMES = 12  # the talk call's five frames and the one before (a talker's onset is quieter than its vowel)
QUIET_DB = -50.0  # a frame this quiet is a pause wherever it is
QUIET_UNDER_PEAK_DB = 30.0  # or this far under the loudest frame of the last ``PEAK_FRAMES``
PEAK_FRAMES = 100
OVERDUE_FRAMES = 300  # a noisy room with no quiet frame: the delay is given back on any frame past this


@dataclass(frozen=True)
class HeldFrame:
    """One frame as each canceller left it, and the one it is heard through so far."""

    outputs: dict[Source, np.ndarray]
    heard: Source

    @property
    def chosen(self) -> np.ndarray:
        return self.outputs[self.heard]


class HeldOutput:
    """One canceller's output, ``HELD_FRAMES`` behind while the assistant speaks."""

    def __init__(self, frame: int, held_frames: int = HELD_FRAMES) -> None:
        self._held: deque[HeldFrame] = deque()
        self._held_frames = held_frames
        self._sent: Source = "aec"  # what the last frame sent was heard through
        self._peaks: deque[float] = deque(maxlen=PEAK_FRAMES)  # the levels of the last frames sent
        self._overdue = 0  # frames sent since the delay was no longer wanted
        self._fade_in = np.linspace(0.0, 1.0, frame, dtype=np.float32)

    @property
    def delay_frames(self) -> int:
        """How far the output runs behind the microphone now, in frames (those held, not yet sent)."""
        return len(self._held)

    def reach_back(self, source: Source) -> None:
        """A talker was told apart: the frames still held that AEC3 would have taken them off in go through
        ``source`` too."""
        for index, held in enumerate(self._held):
            if held.heard == "aec":
                self._held[index] = HeldFrame(held.outputs, source)

    def send(self, frame: HeldFrame, *, hold: bool) -> np.ndarray:
        """The frame to send now that ``frame`` came in; ``hold``: the assistant speaks (the delay is wanted)."""
        wanted = self._held_frames if hold else 0
        self._overdue = 0 if hold else self._overdue + 1
        delay = self.delay_frames  # what ``frame`` will wait
        self._held.append(frame)
        if delay < wanted and self._quiet(self._held[0]):
            return self._out(self._held[0])  # sent now and again next time: the delay grows by a frame
        if delay > wanted and (self._quiet(self._held[0]) or self._overdue > OVERDUE_FRAMES):
            self._held.popleft()  # left out: the delay shrinks by a frame
        return self._out(self._held.popleft())

    def _quiet(self, frame: HeldFrame) -> bool:
        if frame.heard == "linear":  # a talker over the echo
            return False
        level = level_db(frame.chosen)
        return level <= QUIET_DB or (bool(self._peaks) and level <= max(self._peaks) - QUIET_UNDER_PEAK_DB)

    def _out(self, frame: HeldFrame) -> np.ndarray:
        samples = frame.chosen
        self._peaks.append(level_db(samples))
        was, self._sent = self._sent, frame.heard
        if was == frame.heard:
            return samples
        faded = samples * self._fade_in + frame.outputs[was] * (1.0 - self._fade_in)  # no click at the switch
        return faded.astype(np.float32)
