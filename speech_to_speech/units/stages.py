"""The stages of a pipeline unit, each typed as what it is, and the builders that make them per unit.

A builder's type names the queues it is wired to, so mypy checks each stage's
handler class against the items those queues carry (pipeline/queue_items.py);
the unit's code then reaches a stage's voices, languages or turn detector as
attributes of its kind, not by name.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from speech_to_speech.llm.base import LLMHandler
from speech_to_speech.pipeline.handler import BaseHandler, HandlerContext
from speech_to_speech.pipeline.lm_output_processor import LMOutputProcessor
from speech_to_speech.pipeline.queue_items import (
    LLMOutput,
    LLMRequest,
    ResponseOutput,
    StageEvent,
    Transcripts,
    TTSOutput,
    TTSQueueItem,
    Utterances,
    VADInput,
)
from speech_to_speech.pipeline.queues import Sink
from speech_to_speech.pipeline.transcription_notifier import TranscriptionNotifier
from speech_to_speech.stt.base import STTHandler
from speech_to_speech.tts.base import TTSHandler
from speech_to_speech.vad.base import VADHandler
from speech_to_speech.visemes.stage import VisemeStage

Taken = TypeVar("Taken")
Put = TypeVar("Put")
Stage = TypeVar("Stage")

# (context, queue_in, queue_out, stage_events) -> the stage's handler for one unit, around its shared model.
StageBuilder: TypeAlias = Callable[[HandlerContext, "queue.Queue[Taken]", "Sink[Put]", "Sink[StageEvent]"], Stage]


@dataclass(frozen=True)
class StageBuilders:
    """A builder per stage made from a backend, with the queues each is wired to."""

    vad: StageBuilder[VADInput, Utterances, VADHandler]
    stt: StageBuilder[Utterances, Transcripts, STTHandler]
    llm: StageBuilder[LLMRequest, LLMOutput, LLMHandler]
    # Its output goes to the viseme stage, or (with none) to the send loop's queue, which takes all it makes.
    tts: StageBuilder[TTSQueueItem, TTSOutput, TTSHandler]
    visemes: StageBuilder[TTSOutput, ResponseOutput, VisemeStage] | None = None  # optional, after the TTS


@dataclass(frozen=True)
class UnitStages:
    """The handlers of one unit, in pipeline order."""

    vad: VADHandler
    stt: STTHandler
    transcription_notifier: TranscriptionNotifier
    llm: LLMHandler
    lm_output_processor: LMOutputProcessor
    tts: TTSHandler
    visemes: VisemeStage | None = None

    def by_name(self) -> dict[str, BaseHandler[Any, Any, Any]]:
        """Each stage by its name (its thread's, and what health reports say), in pipeline order."""
        named: dict[str, BaseHandler[Any, Any, Any]] = {
            "vad": self.vad,
            "stt": self.stt,
            "transcription_notifier": self.transcription_notifier,
            "llm": self.llm,
            "lm_output_processor": self.lm_output_processor,
            "tts": self.tts,
        }
        if self.visemes is not None:
            named["visemes"] = self.visemes
        return named
