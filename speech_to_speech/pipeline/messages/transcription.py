"""What the STT heard: its transcripts, and the transcription events they become for the client."""

from __future__ import annotations

from dataclasses import dataclass

from speech_to_speech.pipeline.messages.input_audio import UNKNOWN_END, TurnEnd

# Other readings of the same speech by the STT, most likely first: (text, mean log-probability of its tokens).
Readings = tuple[tuple[str, float], ...]
# A larger model's reading of speech over the answer whose words the STT left undecided: (text, mean
# log-probability). Whisper tiny.en heard "Pause." as "Pies." and a sure "Cancel." as an unsure one; the
# larger model hears such words as they were said (see stt.faster_whisper).
SecondReading = tuple[str, float]


@dataclass(frozen=True)
class Transcript:
    """STT output. ``final`` is False for cumulative partial hypotheses."""

    text: str
    final: bool
    item_id: str | None = None
    language: str | None = None
    audio_seconds: float = 0.0
    manual: bool = False
    stt_done_time: float = 0.0
    ended: TurnEnd = UNKNOWN_END
    speculation: int = 0  # of the utterance transcribed (see Utterance.speculation)
    # A speculative pass's doubt that the speech ended where the text ends as a sentence, for the turn
    # detector (see stt.base.Heard); None: unknown, or not asked (a turn's final transcript).
    continuation: float | None = None
    avg_logprob: float | None = None  # how sure the STT was of the words (see stt.base.Heard); None: unknown
    readings: Readings = ()  # where the STT was asked for them (speech over the answer: see stt.base.Heard)
    second_reading: SecondReading | None = None  # see SecondReading; only on a final transcript
    # With the readings: how much less likely (nats) the STT found a hum than these words, for a short
    # transcript (see stt.whisper_window.Decoded.hum_gap); None: not measured.
    hum_gap: float | None = None

    @property
    def speculative(self) -> bool:
        return self.speculation > 0


@dataclass(frozen=True)
class SpeculativeTranscript:
    """What the user said up to a pause; the turn may still go on (see SpeculationVoided)."""

    item_id: str | None
    transcript: str
    speculation: int = 1
    continuation: float | None = None  # see Transcript.continuation
    language: str | None = None  # the language the STT heard it in


@dataclass(frozen=True)
class TranscriptionDelta:
    item_id: str | None
    delta: str


@dataclass(frozen=True)
class TranscriptionSnapshot:
    item_id: str | None
    text: str
    avg_logprob: float | None = None  # see Transcript.avg_logprob
    readings: Readings = ()  # see Transcript.readings
    hum_gap: float | None = None  # see Transcript.hum_gap


@dataclass(frozen=True)
class TranscriptionCompleted:
    item_id: str | None
    transcript: str
    language: str | None = None
    audio_seconds: float = 0.0
    manual: bool = False
    stt_done_time: float = 0.0
    ended: TurnEnd = UNKNOWN_END
    avg_logprob: float | None = None  # see Transcript.avg_logprob
    readings: Readings = ()  # see Transcript.readings
    second_reading: SecondReading | None = None  # see Transcript.second_reading
    hum_gap: float | None = None  # see Transcript.hum_gap
