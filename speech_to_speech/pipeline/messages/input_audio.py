"""The session's audio on its way in, the client's commits and clears of it, and what the VAD says of
it: where speech starts and stops, and the utterances it cuts for the STT.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from speech_to_speech.audio.samples import FloatAudio


@dataclass(frozen=True)
class AudioChunk:
    """512 samples of 16 kHz mono float32 audio for the VAD."""

    samples: FloatAudio
    # Position of the first sample in the session's input stream, in samples.
    offset: int = 0
    # The server's echo canceller was playing the assistant's audio when this was heard: what is left of the
    # echo may be in it, so a voice heard here that is not the user's says nothing of the room.
    echoed: bool = False


@dataclass(frozen=True)
class CommitInput:
    """Force the end of the current user turn (manual input_audio_buffer.commit)."""

    item_id: str | None = None


@dataclass(frozen=True)
class ClearInput:
    """Drop buffered, uncommitted user audio (input_audio_buffer.clear)."""


@dataclass(frozen=True)
class SpeechStarted:
    audio_start_ms: int
    # False when the VAD is configured not to interrupt (turn_detection.interrupt_response).
    interrupt_response: bool = True
    item_id: str | None = None
    # Audio ms from the first voiced chunk to the end of the last one so far (no padding).
    speech_ms: int = 0
    # The turn before this speech, when the VAD ended it itself, and the silence between that turn's last
    # voiced chunk and this speech's first (audio ms): speech soon after a turn may take its reply back.
    after_item_id: str | None = None
    after_silence_ms: int | None = None


@dataclass(frozen=True)
class SpeechStopped:
    audio_end_ms: int
    item_id: str | None = None
    # Audio ms from the first voiced chunk to the end of the last one (no padding); None if unknown.
    speech_ms: int | None = None


@dataclass(frozen=True)
class SpeechOngoing:
    """The utterance ``item_id`` has been voiced for ``speech_ms`` of audio and goes on.

    Sent once per utterance, when its voiced span reaches the session's
    ``overlap_barge_in_ms`` (listen_only sessions only): the overlap policy
    decides on the VAD's audio clock, not on when events reach the event loop.
    """

    item_id: str | None
    speech_ms: int


@dataclass(frozen=True)
class SpeculationVoided:
    """The speculative utterances of a turn up to number ``speculation`` no longer hold.

    The user spoke again after the pause, or the turn was cleared or
    committed under another item id. It comes straight from the VAD, so it
    may overtake the transcripts of those utterances, which go through the STT.
    """

    item_id: str | None = None
    speculation: int = 0


@dataclass(frozen=True)
class TurnEnd:
    """When a turn ended, on time.monotonic(): ``vad``, when the VAD ended it (0: unknown); ``speech``, when
    its last voiced audio came in (the user stopped speaking, a silence before)."""

    vad: float = 0.0
    speech: float = 0.0

    @classmethod
    def now(cls) -> TurnEnd:
        """A turn ended now, its speech with it (a manual commit, a pause's speculation)."""
        at = time.monotonic()
        return cls(at, at)


UNKNOWN_END = TurnEnd()  # a transcript of no turn the VAD ended (a test's, a conversation item's)


@dataclass(frozen=True)
class Utterance:
    """One user turn's audio, cut by the VAD or a manual commit."""

    samples: FloatAudio
    audio_start_ms: int
    audio_end_ms: int
    item_id: str | None = None
    # True when the turn was committed by the client (no automatic response).
    manual: bool = False
    ended: TurnEnd = UNKNOWN_END
    # A hypothesis of a turn that may still go on: the speech so far, sent at a pause. It carries
    # the pause's number within its turn (1, 2, …; see turns.controller); 0 for a turn's real end.
    speculation: int = 0
    # The number of this turn's last speculative utterance when no speech followed it: its
    # transcript still holds for the whole turn (0: transcribe the turn).
    reuses: int = 0
    # The speech so far of a turn the user is still speaking (no pause): transcribed for the live
    # transcript and to let the LLM read ahead, only when nothing newer of the turn waits.
    interim: bool = False
    # An interim utterance whose words decide what speech over the assistant's answer is (a listener's
    # "yeah", or a bid for the turn): transcribed at once as urgent work, never skipped (ProbeSpeech).
    probe: bool = False

    @property
    def speculative(self) -> bool:
        return self.speculation > 0

    @property
    def reuse_speculation(self) -> bool:
        return self.reuses > 0
