"""TTS through any OpenAI-compatible ``/v1/audio/speech`` endpoint, streamed.

``response_format="pcm"`` is raw 24 kHz mono PCM16, so audio can go out as
the bytes arrive; a cancelled response closes the HTTP stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech import registry
from speech_to_speech.config import LoadContext, TTSSettings
from speech_to_speech.openai_client import make_client
from speech_to_speech.tts.base import TTSHandler

DEFAULT_MODEL = "tts-1"
DEFAULT_VOICE = "alloy"
SAMPLE_RATE = 24000  # what OpenAI's speech endpoint returns as pcm
# 4800 bytes = 100 ms of PCM16 at 24 kHz.
READ_BYTES = 4800


def load_openai_tts(settings: TTSSettings, context: LoadContext) -> Any:
    return make_client(settings.base_url, settings.api_key)


def pcm16_frames(chunks: Iterator[bytes]) -> Iterator[npt.NDArray[np.int16]]:
    """Whole int16 samples from a byte stream whose chunks may split a sample in two."""
    carry = b""
    for chunk in chunks:
        data = carry + chunk
        whole = len(data) - len(data) % 2
        carry = data[whole:]
        if whole:
            yield np.frombuffer(data[:whole], dtype="<i2").astype(np.int16)


@registry.register("tts", "openai", load_openai_tts)
class OpenAITTS(TTSHandler):
    sample_rate = SAMPLE_RATE

    def synthesize(self, text: str, voice: str | None, language: str | None) -> Iterator[npt.NDArray[Any]]:
        extra: dict[str, Any] = {"speed": self.settings.speed} if self.settings.speed != 1.0 else {}
        with self.model.audio.speech.with_streaming_response.create(
            model=self.settings.model or DEFAULT_MODEL,
            voice=voice or self.settings.voice or DEFAULT_VOICE,
            input=text,
            response_format="pcm",
            **extra,
        ) as response:
            yield from pcm16_frames(response.iter_bytes(READ_BYTES))
