"""Whether speech is loud enough to be this session's user, by what the user has sounded like so far.

A television across the room, people talking at the next desk: their speech
reaches the microphone, the VAD hears speech, and without a check each of their
sentences is a turn that gets an answer. The person at the microphone is
louder there than a voice across the room (the level falls ~6 dB with each
doubling of the distance). So speech that starts a turn is compared with the
session's user's own: the level of the turns taken as theirs so far. Speech
more than ``margin_db`` under it does not start a turn. The first turn of a
session, with nothing to compare, is taken as the user's. Pure: levels in,
yes or no out; the VAD applies it (vad/user_gate.py).
"""

from __future__ import annotations

from collections import deque
from statistics import median

import numpy as np
import numpy.typing as npt

# The user's level is the median of their last few turns': one loud laugh or one soft reply moves it little.
REMEMBERED_TURNS = 5
FLOOR_DB = -100.0  # digital silence


def level_db(chunks: list[npt.NDArray[np.float32]]) -> float:
    """The speech level (dBFS) of voiced chunks: the RMS over all of their samples."""
    if not chunks:
        return FLOOR_DB
    samples = np.concatenate(chunks)
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64)))) if len(samples) else 0.0
    return max(FLOOR_DB, 20.0 * np.log10(rms)) if rms > 0 else FLOOR_DB


class UserLevel:
    """The session's user's speech level, learnt from their turns; ``margin_db`` 0 takes every turn."""

    def __init__(self, margin_db: float) -> None:
        self.margin_db = margin_db
        self._turns: deque[float] = deque(maxlen=REMEMBERED_TURNS)

    @property
    def reference_db(self) -> float | None:
        return median(self._turns) if self._turns else None

    def accepts(self, level: float, margin_db: float | None = None) -> bool:
        """Whether speech at ``level`` dBFS may start a turn (within ``margin_db`` of the user's; default the
        session's margin)."""
        reference = self.reference_db
        margin = self.margin_db if margin_db is None else margin_db
        return self.margin_db <= 0 or reference is None or level >= reference - margin

    def took(self, level: float) -> None:
        """A turn at ``level`` dBFS was taken as the user's."""
        self._turns.append(level)
