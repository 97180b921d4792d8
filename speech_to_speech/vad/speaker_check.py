"""The speaker check of one session's VAD: the user's voice learnt from their turns, and speech held to it.

The decision is :class:`~speech_to_speech.turns.user_voice.UserVoice`'s; this
object runs the embedder for it, on the VAD's thread, when a turn needs a
print: speech in doubt by its level (one pass per ``PRINT_MS`` of its voice
until it starts a turn or ends), and the user's first turns (one pass each,
after the turn's utterance has gone to the STT).
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.turns.user_voice import PRINT_MS, UserVoice
from speech_to_speech.vad.speaker_embedder import SpeakerEmbedder

PRINT_SAMPLES = 4 * PIPELINE_RATE  # a long turn's print: its last 4 s of voice (a pass costs ~30 ms a second)
# For this long after another voice was heard, all speech must sound like the user, however loud: a television's
# loudest sentences reach the user's level (bench room's card reader, 3 dB under the user, started 2 turns in
# 2 minutes by its level alone). In a quiet room the user's turns need no print.
ROOM_MEMORY_S = 30.0
logger = logging.getLogger(__name__)


class SpeakerCheck:
    """One session's user's voice, and whether the current speech is it (``embedder`` None: every speech is)."""

    def __init__(self, embedder: SpeakerEmbedder | None) -> None:
        self.embedder = embedder
        self.user = UserVoice()
        self._due_ms = PRINT_MS  # the voiced ms at which the current speech's print is (next) taken
        self._other_voice_at = -math.inf  # when (time.monotonic) a voice not the user's was last heard
        self._echoed = False  # the current speech was heard while the assistant's audio played

    def new_session(self) -> None:
        self.user = UserVoice()
        self._other_voice_at = -math.inf
        self.new_speech()

    def _room_talking(self) -> bool:
        return time.monotonic() - self._other_voice_at < ROOM_MEMORY_S

    def new_speech(self, echoed: bool = False) -> None:
        self._due_ms = PRINT_MS
        # Heard while the assistant's audio played through the server's echo canceller: a voice not the
        # user's may be the echo's remains, not the room (and the user's own words over it print mixed).
        self._echoed = echoed

    def heard(self, echoed: bool) -> None:
        """Another voiced chunk of the current speech (``echoed``: heard while the assistant's audio played)."""
        self._echoed |= echoed

    def sounds_like_user(self, voiced: list[FloatAudio], voiced_ms: int, level: float,
                         reference: float | None, ended: bool = False) -> bool:
        """Whether speech with ``voiced`` audio (``voiced_ms`` of it, at ``level`` dBFS; the user's level is
        ``reference``) may start a turn by its voice: yes where no print is needed (as loud as the user, and no
        other voice heard lately); no until it has ``PRINT_MS`` of voice; then by its print, taken again with
        each ``PRINT_MS`` more; and, once it has ``ended`` short of that, by the print of what there was (a
        short "Stop." or a soft "yes" is judged at its end rather than never)."""
        if self.embedder is None or not self.user.enrolled:
            return True
        if not self.user.needs_print(level, reference) and not self._room_talking():
            return True
        if voiced_ms < self._due_ms and not (ended and voiced_ms < PRINT_MS):
            return False
        self._due_ms = voiced_ms + PRINT_MS
        voice = self.embedder.voice_print(np.concatenate(voiced)[-PRINT_SAMPLES:])
        accepted = self.user.accepts(voice)
        if not accepted and not self._echoed:
            self._other_voice_at = time.monotonic()
        logger.debug("speaker check: %s at %.1f dB (user %.1f dB), %d ms of voice, similarity %.2f",
                     "the user" if accepted else "not the user", level, reference or 0.0, voiced_ms,
                     self.user.similarity(voice) if voice is not None else 1.0)
        return accepted

    def learn(self, voiced: list[FloatAudio]) -> bool:
        """Whether a turn that was taken, with ``voiced`` audio, is the user's: their first, or one that sounds
        like them (the user's print learns from it while it still learns); with no embedder, every turn."""
        if self.embedder is None:
            return True
        samples = np.concatenate(voiced)[-PRINT_SAMPLES:]
        voice = self.embedder.voice_print(samples)
        if voice is None:
            return True  # too short to tell
        theirs = self.user.accepts(voice)
        if theirs:
            self.user.enroll(voice, len(samples) / PIPELINE_RATE)
        elif not self._echoed:
            self._other_voice_at = time.monotonic()
        logger.debug("speaker check: a turn of %s (similarity %.2f)", "the user" if theirs else "another voice",
                     self.user.similarity(voice))
        return theirs
