"""A pipeline unit built from the real default backends: spoken question in, spoken answer out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.llama_cpp_lm import LlamaCppLM
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest
from speech_to_speech.pipeline.messages.input_audio import SpeechStarted, SpeechStopped
from speech_to_speech.pipeline.messages.speech_output import AudioOutput
from speech_to_speech.pipeline.messages.transcription import TranscriptionCompleted
from speech_to_speech.stt.faster_whisper import FasterWhisperSTT
from speech_to_speech.testing.engine import collect, collect_response, loading, stage
from speech_to_speech.tts.hibari import HibariTTS
from speech_to_speech.units.stages import StageBuilders
from speech_to_speech.units.unit import PipelineUnit
from speech_to_speech.vad.silero import SileroVAD, load_silero

pytestmark = pytest.mark.real_models


def test_spoken_question_gets_a_spoken_answer(hibari_voices: Any, whisper: Any, llama_lm: Any, spoken: Any) -> None:
    settings = ServerSettings()
    builders = StageBuilders(
        vad=stage(SileroVAD, settings, load_silero(*loading("vad", settings))),
        stt=stage(FasterWhisperSTT, settings, whisper),
        llm=stage(LlamaCppLM, settings, llama_lm),
        tts=stage(HibariTTS, settings, hibari_voices),
    )
    unit = PipelineUnit(0, builders)
    unit.start()
    try:
        silence = np.zeros(16000, np.float32)
        unit.push_audio(np.concatenate([silence, spoken("What is the capital of France?"), silence]))
        events = collect(unit.queues.stage_events, TranscriptionCompleted, timeout=30)
        kinds = [type(e) for e in events]
        assert kinds.index(SpeechStarted) < kinds.index(SpeechStopped) < kinds.index(TranscriptionCompleted)
        question = events[-1].transcript
        assert "capital" in question.lower() and "france" in question.lower()

        unit.submit(
            GenerateResponseRequest("resp_1", unit.cancel_scope.generation, (ChatMessage("user", question),))
        )
        response = collect_response(unit, "resp_1", timeout=60)
        assert response.done.status == "completed"
        assert "paris" in response.text.lower()
        assert len(response.audio) > 24000 // 2  # at least half a second of speech
        assert all(i.sample_rate == 24000 for i in response.of_type(AudioOutput))
    finally:
        unit.stop()
