"""TTSHandler: clauses in, transcript text then 24 kHz PCM16 out, in order.

The transcript is the clause's text; the voice says its ``spoken`` form when
it has one (LMOutputProcessor makes it, so every backend reads the same).

Backends implement ``synthesize`` (a stream of float32 or int16 arrays at
``sample_rate``, or of ``Phonemized`` arrays when the backend knows what it
said, for the viseme stage); this base resamples to the output rate, stamps the
generation, stops on staleness, and forwards every other item unchanged so
tool calls and the response sentinel keep their place behind the audio.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.rates import TTS_RATE
from speech_to_speech.audio.resample import StreamResampler, to_int16
from speech_to_speech.config import TTSSettings
from speech_to_speech.pipeline.handler import BackendHandler
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, LLMFirstToken, ResponseDone, TokenUsage
from speech_to_speech.pipeline.messages.speech_output import (
    AudioOutput,
    SpokenPhonemes,
    TranscriptText,
    TTSFirstAudio,
    TTSInput,
)

# Audio leaves the TTS in pieces of at most this many samples (100 ms), so a
# cancel takes effect within one piece and the send loop can stream early.
MAX_PIECE = TTS_RATE // 10


@dataclass(frozen=True)
class Phonemized:
    """Audio of a backend that also says which phonemes (misaki/Kokoro alphabet) it spoke in it.

    ``durations``: how long each symbol of ``phonemes`` lasted, in samples of
    ``audio``, the first starting at sample ``start``, when the backend knows.
    """

    audio: npt.NDArray[Any]
    phonemes: str
    durations: tuple[int, ...] | None = None
    start: int = 0

    def told(self, response_id: str, generation: int, samples: int, ratio: float) -> SpokenPhonemes:
        """The message that announces this audio, ``samples`` long once resampled by ``ratio``."""
        durations = None
        if self.durations is not None:  # rescale the boundaries, not each length, so nothing drifts
            bounds = np.round(np.cumsum((self.start, *self.durations)) * ratio).astype(int)
            durations = tuple(int(d) for d in np.diff(bounds))
        return SpokenPhonemes(response_id, generation, self.phonemes, samples, durations, round(self.start * ratio))


# What the TTS makes of a clause: its transcript, its audio, the phonemes said in it, the mark of the first audio.
SpeechPart = TranscriptText | AudioOutput | SpokenPhonemes | TTSFirstAudio
# What it lets through behind the audio before it: tool calls, usage, the response's sentinel.
AfterSpeech = AssistantToolCallPart | TokenUsage | LLMFirstToken | ResponseDone


class TTSHandler(BackendHandler[TTSInput, SpeechPart, AfterSpeech]):
    stage = "tts"
    settings: TTSSettings  # the tts section
    sample_rate: int = TTS_RATE

    _first_audio_of: tuple[str, int] | None = None  # the request (response id, generation) marked

    @property
    def voices(self) -> tuple[str, ...] | None:
        """The voice names this backend speaks with; None when it cannot list them (then any is tried)."""
        return None

    def synthesize(
        self, text: str, voice: str | None, language: str | None
    ) -> Iterator[npt.NDArray[Any] | Phonemized]:
        raise NotImplementedError

    def process(self, item: TTSInput) -> Iterator[SpeechPart]:
        generation = item.generation
        yield TranscriptText(item.response_id, generation, item.text)
        said = item.text if item.spoken is None else item.spoken
        if not item.speak or not said.strip():
            return
        resampler = StreamResampler(self.sample_rate, TTS_RATE) if self.sample_rate != TTS_RATE else None
        voice = item.voice or self.settings.voice
        for spoken in self.synthesize(said.strip(), voice, item.language):
            if self.cancel_scope.is_stale(generation):
                return
            audio = spoken.audio if isinstance(spoken, Phonemized) else spoken
            pcm = to_int16(resampler.process(audio) if resampler else audio)
            if isinstance(spoken, Phonemized) and self.settings.enable_visemes and len(pcm):
                yield spoken.told(item.response_id, generation, len(pcm), TTS_RATE / self.sample_rate)
            for start in range(0, len(pcm), MAX_PIECE):
                if start and self.cancel_scope.is_stale(generation):
                    return  # a backend may hand over seconds at once: stop within one piece
                piece = pcm[start : start + MAX_PIECE]
                piece.flags.writeable = False
                if self._first_audio_of != (item.response_id, generation):
                    self._first_audio_of = (item.response_id, generation)
                    yield TTSFirstAudio(item.response_id, generation, time.monotonic())
                yield AudioOutput(item.response_id, generation, piece, TTS_RATE)
        if resampler is not None and not self.cancel_scope.is_stale(generation):
            tail = to_int16(resampler.flush())
            if len(tail):
                yield AudioOutput(item.response_id, generation, tail, TTS_RATE)


def silence(seconds: float, rate: int = TTS_RATE) -> npt.NDArray[np.int16]:
    return np.zeros(int(seconds * rate), dtype=np.int16)
