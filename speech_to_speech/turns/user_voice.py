"""Whether speech is this session's user's voice, by the voice prints of their first turns.

The level check (:mod:`user_level`) keeps a voice across the room from starting
turns while it is well under the user's level; a loud sentence of a television
10 dB under the user still reaches the margin. So speech that is not as loud
as the user (more than ``SURE_DB`` under their level) must also sound like
them: its voice print (a speaker embedding, computed by the VAD stage) against
the user's, learnt from their first ``ENROLL_TURNS`` turns taken at their
level. Under ``threshold`` (cosine) it does not start a turn. Speech at the
user's level starts turns as before, whoever speaks (a second person at the
microphone is at the microphone), and before the user's print is known
nothing is rejected. A turn that was taken but does not sound like the user
teaches neither their print nor their level (the VAD asks :meth:`accepts`
after each turn): the room must not become the user. Pure: prints and levels
in, yes or no out.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Print = npt.NDArray[np.float32]

# Tuned on hibari's two voices, pocketsphinx's LibriVox and card recordings (docs/benchmarks/room/
# speaker_check_offline.json): a user's own clips scored 0.57 and up against their print, 6 % of other voices'
# 0.45 and up; on the held-out recordings, 0.78 and up, and 9 %.
THRESHOLD = 0.45
SURE_DB = 2.0  # within this of the user's level: the person at the microphone, no print needed
ENROLL_TURNS = 3  # the user's print is the mean of their first turns' (weighted by their voiced length)
PRINT_MS = 500  # the voice a print is first taken on; then again with each PRINT_MS more while in doubt


class UserVoice:
    """The session's user's voice print, learnt from their turns."""

    def __init__(self, threshold: float = THRESHOLD) -> None:
        self.threshold = threshold
        self._sum: npt.NDArray[np.float64] | None = None
        self.turns = 0  # turns enrolled

    @property
    def enrolled(self) -> bool:
        return self._sum is not None

    @property
    def learning(self) -> bool:
        """Whether another turn of the user's would still be learnt."""
        return self.turns < ENROLL_TURNS

    def needs_print(self, level: float, reference: float | None) -> bool:
        """Whether speech at ``level`` dBFS must sound like the user to start a turn (the user's level
        being ``reference``): once a print is known, speech not as loud as the user."""
        return self.enrolled and reference is not None and level < reference - SURE_DB

    def similarity(self, voice: Print) -> float:
        """Cosine of ``voice`` (unit length) with the user's print (1.0 before there is one)."""
        if self._sum is None:
            return 1.0
        user = self._sum / (np.linalg.norm(self._sum) + 1e-12)
        return float(np.dot(user, voice))

    def accepts(self, voice: Print | None) -> bool:
        """Whether ``voice`` is the user's (no print, or none known yet: yes)."""
        return voice is None or self.similarity(voice) >= self.threshold

    def enroll(self, voice: Print, seconds: float) -> None:
        """A turn of ``seconds`` of voice, taken as the user's at their level, sounded like ``voice``."""
        if not self.learning or seconds <= 0:
            return
        weighted = np.asarray(voice, np.float64) * seconds
        self._sum = weighted if self._sum is None else self._sum + weighted
        self.turns += 1
