"""VisemeStage: between the TTS and the send loop, a viseme list before every audio chunk.

It runs only with ``--enable_visemes``, and works only for a session that
asked for the visemes extension; for any other session it forwards the
audio untouched. Like every stage it stops with the CancelScope: it takes
no stale item, and what it emits for a cancelled generation is dropped on
the way out (``BaseHandler.emit``).

When the TTS told the phonemes of a stretch of audio (``SpokenPhonemes``)
the chunks of that stretch are held until all of it is here (the TTS makes
a sentence at once, so this costs no time), timed together, then sent each
behind its visemes; any other audio is classed as it comes (acoustic).
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from speech_to_speech.audio.rates import TTS_RATE
from speech_to_speech.pipeline.handler import BaseHandler, HandlerContext
from speech_to_speech.pipeline.messages.control import Control
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, LLMFirstToken, ResponseDone, TokenUsage
from speech_to_speech.pipeline.messages.speech_output import (
    AudioOutput,
    AudioVisemes,
    SpokenPhonemes,
    TranscriptText,
    TTSFirstAudio,
)
from speech_to_speech.pipeline.queue_items import ResponseOutput, TTSOutput
from speech_to_speech.pipeline.queues import Sink
from speech_to_speech.protocol import VISEMES_EXTENSION
from speech_to_speech.visemes.acoustic import AcousticVisemes
from speech_to_speech.visemes.timeline import align, slice_chunk


@dataclass
class _Stretch:
    """Audio announced by ``SpokenPhonemes``, collected until it is complete."""

    told: SpokenPhonemes
    chunks: list[AudioOutput] = field(default_factory=list)
    samples: int = 0

    def takes(self, chunk: AudioOutput) -> bool:
        return (chunk.response_id, chunk.generation) == (self.told.response_id, self.told.generation)


# What it takes (audio, and the phonemes said in it), what it makes (the audio behind its visemes), and what it
# lets through in order with the audio: the transcript, the first-audio mark, tool calls, usage, the sentinel.
Voiced = AudioOutput | SpokenPhonemes
Shown = AudioOutput | AudioVisemes
Beside = TranscriptText | TTSFirstAudio | AssistantToolCallPart | TokenUsage | LLMFirstToken | ResponseDone


class VisemeStage(BaseHandler[Voiced, Shown, Beside]):
    stage: ClassVar[str] = "visemes"

    def __init__(self, context: HandlerContext, queue_in: queue.Queue[TTSOutput],
                 queue_out: Sink[ResponseOutput] | None) -> None:
        super().__init__(context, queue_in, queue_out)
        self._stretch: _Stretch | None = None
        self._acoustic = AcousticVisemes(TTS_RATE)

    @property
    def wanted(self) -> bool:
        return self.context.config.current.has_extension(VISEMES_EXTENSION)

    def outputs(self, item: Voiced | Beside | Control) -> Iterator[Shown | Beside | Control]:
        if self._stretch is not None and self._stretch.chunks and not isinstance(item, self.consumes):
            yield from self._release()  # nothing overtakes audio held for timing
        yield from super().outputs(item)

    def on_session_end(self) -> None:
        self._stretch = None
        self._acoustic.reset()

    def process(self, item: Voiced) -> Iterator[Shown]:
        if isinstance(item, SpokenPhonemes):
            yield from self._release()
            if self.wanted and item.samples > 0:
                self._stretch = _Stretch(item)
            return
        stretch = self._stretch
        if stretch is not None and stretch.takes(item):
            stretch.chunks.append(item)
            stretch.samples += len(item.samples)
            if stretch.samples >= stretch.told.samples:
                yield from self._release()
            return
        yield from self._release()
        if not self.wanted or item.sample_rate != TTS_RATE:
            yield item
            return
        segments = self._acoustic.segments(item.samples)
        yield AudioVisemes(item.response_id, item.generation, slice_chunk(segments, 0, len(item.samples), TTS_RATE),
                           "audio")
        yield item

    def _release(self) -> Iterator[Shown]:
        """The held stretch, timed by its phonemes over the audio that came (all of it, or less if cut)."""
        stretch, self._stretch = self._stretch, None
        if stretch is None or not stretch.chunks:
            return
        audio = np.concatenate([chunk.samples for chunk in stretch.chunks])
        told = stretch.told
        segments = align(told.phonemes, audio, TTS_RATE, told.durations, told.start)
        start = 0
        for chunk in stretch.chunks:
            end = start + len(chunk.samples)
            yield AudioVisemes(chunk.response_id, chunk.generation, slice_chunk(segments, start, end, TTS_RATE),
                               "phonemes")
            yield chunk
            start = end
