"""STT through any OpenAI-compatible ``/v1/audio/transcriptions`` endpoint.

The utterance travels as a 16 kHz PCM16 WAV built in memory.
"""

from __future__ import annotations

import io
import wave
from typing import Any

from speech_to_speech import registry
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.resample import to_int16
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import LoadContext, STTSettings
from speech_to_speech.openai_client import make_client
from speech_to_speech.stt.base import STTHandler

DEFAULT_MODEL = "whisper-1"


def wav_bytes(samples: FloatAudio, rate: int = PIPELINE_RATE) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(to_int16(samples).tobytes())
    return buffer.getvalue()


def load_openai_stt(settings: STTSettings, context: LoadContext) -> Any:
    return make_client(settings.base_url, settings.api_key)


@registry.register("stt", "openai", load_openai_stt)
class OpenAISTT(STTHandler):
    uses_local_cpu = False  # it waits on the provider: other sessions' decodes need not give way

    def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
        if not len(samples):
            return "", language
        extra: dict[str, Any] = {"language": language.split("-")[0].lower()} if language else {}
        result = self.model.audio.transcriptions.create(
            model=self.settings.model or DEFAULT_MODEL,
            file=("speech.wav", wav_bytes(samples), "audio/wav"),
            **extra,
        )
        # The json format carries no detected language; report the one we asked for, if any.
        return str(result.text), language
