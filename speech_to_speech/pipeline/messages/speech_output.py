"""The TTS's side of a response: the text it is given, the audio it makes, the transcript in order
with that audio, and the phonemes and visemes that go with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from speech_to_speech.audio.samples import Int16Audio
from speech_to_speech.pipeline.messages.ownership import ResponseOwned


@dataclass(frozen=True)
class TTSInput(ResponseOwned):
    """A clause of assistant text for the TTS; ``text`` is also the transcript delta.

    ``spoken`` is what the voice says for it (markup dropped, numbers in words:
    see ``speech_text``); None says ``text`` as it is.
    """

    text: str
    voice: str | None = None
    language: str | None = None
    speak: bool = True
    spoken: str | None = None


@dataclass(frozen=True)
class AudioOutput(ResponseOwned):
    """Synthesised speech: mono int16 PCM at ``sample_rate``."""

    samples: Int16Audio
    sample_rate: int


@dataclass(frozen=True)
class TTSFirstAudio(ResponseOwned):
    """Timing mark: the TTS produced the first audio of a response."""

    time: float


@dataclass(frozen=True)
class TranscriptText(ResponseOwned):
    """Transcript text that goes to the wire in order with the audio (after TTS).

    The TTS sends one per clause, before that clause's audio, and the next one
    only after all of it: the audio between two of them voices the first one's
    text. The playback ledger's text marks rest on this order
    (realtime/conversation/text_marks.py); a stage that reorders the two breaks truncation.
    """

    text: str


@dataclass(frozen=True)
class SpokenPhonemes(ResponseOwned):
    """The phonemes of the next ``samples`` of a response's audio (told by a TTS that knows them).

    It comes right before that audio, and only when the viseme stage is on.
    ``durations`` (24 kHz samples, one per symbol of ``phonemes``, the first
    starting at sample ``start``) when the TTS also knows how long each lasted.
    """

    phonemes: str
    samples: int
    durations: tuple[int, ...] | None = None
    start: int = 0


@dataclass(frozen=True)
class Viseme:
    """A mouth shape (a name of visemes/catalog.py) from ``start_ms`` for ``duration_ms`` of one chunk."""

    viseme: str
    start_ms: int
    duration_ms: int


@dataclass(frozen=True)
class AudioVisemes(ResponseOwned):
    """The visemes of the ``AudioOutput`` that comes right after it on the same queue.

    ``source`` says where they came from: "phonemes" (the TTS's) or "audio" (heard in the samples).
    """

    visemes: tuple[Viseme, ...]
    source: Literal["phonemes", "audio"]
