"""What mypy must say about the wiring of a unit's stages: read by mypy (``make typecheck``), never run.

Each line that ends in ``# type: ignore[...]`` is a wiring mypy must reject. mypy runs with
``warn_unused_ignores``, so a change that lets one through (a stage's types gone back to Any, a
builder that no longer checks the handler class) fails the type check here, by name.
"""

from __future__ import annotations

from typing import assert_type

from speech_to_speech.llm.base import LLMHandler
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.lm_output_processor import LMOutputProcessor
from speech_to_speech.pipeline.messages.control import Control
from speech_to_speech.pipeline.messages.input_audio import Utterance
from speech_to_speech.pipeline.messages.transcription import Transcript
from speech_to_speech.pipeline.queue_items import Transcripts, Utterances
from speech_to_speech.pipeline.transcription_notifier import TranscriptionNotifier
from speech_to_speech.stt.base import STTHandler
from speech_to_speech.tts.base import TTSHandler
from speech_to_speech.units.builder import stage_builder
from speech_to_speech.units.stages import StageBuilder
from speech_to_speech.units.unit import PipelineQueues, PipelineUnit
from speech_to_speech.vad.base import VADHandler


def a_stage_takes_the_queues_of_its_items(context: HandlerContext, queues: PipelineQueues) -> None:
    TranscriptionNotifier(context, queues.transcripts, queues.stage_events)
    LMOutputProcessor(context, queues.llm_output, queues.tts_input)
    # The STT's utterances are not transcripts; the notifier's events do not go to the LLM's output queue.
    TranscriptionNotifier(context, queues.utterances, queues.stage_events)  # type: ignore[arg-type]
    TranscriptionNotifier(context, queues.transcripts, queues.llm_output)  # type: ignore[arg-type]
    # The LM output processor lets the first-token mark through: a queue without it cannot be its input.
    LMOutputProcessor(context, queues.tts_input, queues.tts_input)  # type: ignore[arg-type]
    # The VAD hears the session's audio and its turn's feedback, and hands the STT utterances.
    VADHandler(context, queues.vad_input, queues.utterances, model=None, settings=None)
    VADHandler(context, queues.utterances, queues.utterances, model=None, settings=None)  # type: ignore[arg-type]
    VADHandler(context, queues.vad_input, queues.transcripts, model=None, settings=None)  # type: ignore[arg-type]


def a_backend_is_built_for_its_own_queues() -> None:
    built: StageBuilder[Utterances, Transcripts, STTHandler] = stage_builder(STTHandler, None, {})
    assert_type(stage_builder(STTHandler, None, {}),
                StageBuilder[Utterance | Control, Transcript | Control, STTHandler])
    wrong: StageBuilder[Utterances, Transcripts, LLMHandler] = stage_builder(LLMHandler, None, {})  # type: ignore[arg-type]
    del built, wrong


def what_a_stage_makes(stt: STTHandler, utterance: Utterance) -> None:
    for made in stt.process(utterance):
        assert_type(made, Transcript)


def a_unit_has_typed_stages(unit: PipelineUnit) -> None:
    assert_type(unit.stages.stt, STTHandler)
    assert_type(unit.stages.tts, TTSHandler)
    assert_type(unit.stages.vad, VADHandler)
    assert_type(unit.stages.tts.voices, tuple[str, ...] | None)
