"""Whether the speech the VAD hears is this session's user's, by its level and (``--speaker_check on``) their voice.

The VAD stage holds one per session: it hands over each voiced chunk of the
current speech, asks :meth:`UserGate.is_user` before the speech may start a
turn, and, once a turn was taken, lets the gate learn the user from it. The
decisions are :class:`~speech_to_speech.turns.user_level.UserLevel`'s and
:class:`~speech_to_speech.turns.user_voice.UserVoice`'s; this object keeps the
current speech's voiced audio for them.
"""

from __future__ import annotations

from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.turns.user_level import UserLevel, level_db
from speech_to_speech.vad.speaker_check import SpeakerCheck
from speech_to_speech.vad.speaker_embedder import SpeakerEmbedder

# A taken turn is learnt from this many chunks (~1 s of audio) after it ended, or when the next speech begins if
# sooner: its voice print (16-71 ms of CPU) then runs while the answer plays, not beside the STT and the TTS as
# the answer starts (bench turns: the STT hop's p50 went from 0.6 to 2.2 ms when it ran at once).
LEARN_AFTER_CHUNKS = 32


class UserGate:
    """One session's user, by level (``margin_db``) and voice (``embedder`` None: by level only); speech whose
    last ``recent_chunks`` voiced chunks are as loud as the user is theirs."""

    def __init__(self, margin_db: float, recent_chunks: int, embedder: SpeakerEmbedder | None) -> None:
        self.margin_db = margin_db
        self.recent_chunks = recent_chunks
        self.level = UserLevel(margin_db)
        self.speaker = SpeakerCheck(embedder)
        self.voiced: list[FloatAudio] = []  # the current speech's voiced chunks' samples
        self._taken: list[FloatAudio] | None = None  # a taken turn's voice, not yet learnt from
        self._learn_in = 0  # chunks until it is

    def new_session(self) -> None:
        self.level = UserLevel(self.margin_db)
        self.speaker.new_session()
        self._taken = None

    def new_speech(self, samples: FloatAudio, echoed: bool = False) -> None:
        """Speech begins with a voiced chunk of ``samples`` (a new list: a turn's, handed to :meth:`learn`, stays
        whole)."""
        self._learn_now()  # what the last turn teaches comes first (the speaker check's echoed is still its)
        self.voiced = [samples]
        self.speaker.new_speech(echoed)

    def heard(self, samples: FloatAudio, echoed: bool = False) -> None:
        """Another voiced chunk of the current speech (``echoed``: heard while the assistant's audio played)."""
        self.voiced.append(samples)
        self.speaker.heard(echoed)

    def is_user(self, voiced_ms: int, ended: bool = False) -> bool:
        """Whether the current speech (``voiced_ms`` of voice) is the user's by its level against the session's
        user's turns so far: its last ``recent_chunks`` as loud as the user (who starts talking over a voice across
        the room) or all of its voice within the margin; and, if not as loud as the user over all of it, their
        voice (``--speaker_check``). Asked again with each voiced chunk until it starts a turn: a louder stretch
        of a distant voice is diluted by the rest of it. The voice is asked of a loud stretch too: a television's
        loudest words reach the user's average level (a card reader 3 dB under the user started 2 turns in 2
        minutes of bench room's background talk by such a stretch alone)."""
        level = level_db(self.voiced)
        if not (self.level.accepts(level_db(self.voiced[-self.recent_chunks:]), 0.0) or self.level.accepts(level)):
            return False
        return self.speaker.sounds_like_user(self.voiced, voiced_ms, level, self.level.reference_db, ended)

    def learn(self, voiced: list[FloatAudio]) -> None:
        """A turn with ``voiced`` audio was taken: the user's level and voice learn from it, if it is theirs (a voice
        that is not theirs, let in by its level, teaches neither: the room must not become the user), once
        ``LEARN_AFTER_CHUNKS`` more chunks have been heard or the next speech begins."""
        self._learn_now()
        self._taken, self._learn_in = voiced, LEARN_AFTER_CHUNKS

    def chunk_heard(self) -> None:
        """Another chunk of audio went by (speech or not)."""
        if self._taken is not None:
            self._learn_in -= 1
            if self._learn_in <= 0:
                self._learn_now()

    def _learn_now(self) -> None:
        voiced, self._taken = self._taken, None
        if voiced is not None and self.speaker.learn(voiced):
            self.level.took(level_db(voiced))
