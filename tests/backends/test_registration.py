"""Every real backend registers under its name, with the right base class; optional ones fail clearly."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from speech_to_speech import registry
from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.base import LLMHandler
from speech_to_speech.stt.base import STTHandler
from speech_to_speech.testing.engine import loading
from speech_to_speech.tts.base import TTSHandler
from speech_to_speech.vad.base import VADHandler

BASES = {"vad": VADHandler, "stt": STTHandler, "llm": LLMHandler, "tts": TTSHandler}
OURS = [
    ("vad", "silero"),
    ("stt", "faster-whisper"),
    ("stt", "openai"),
    ("llm", "ctranslate2"),
    ("llm", "transformers"),
    ("llm", "llama-cpp"),
    ("llm", "mlx-lm"),
    ("tts", "hibari"),
    ("tts", "kokoro"),
    ("tts", "openai"),
]


@pytest.mark.parametrize(("kind", "name"), OURS)
def test_backend_registers_its_handler(kind: registry.Kind, name: str) -> None:
    backend = registry.get(kind, name)
    assert issubclass(backend.handler, BASES[kind])
    assert callable(backend.load)


def test_defaults_are_the_offline_backends() -> None:
    settings = ServerSettings()
    assert (settings.vad.backend, settings.stt.backend, settings.llm.backend, settings.tts.backend) == (
        "silero",
        "faster-whisper",
        "llama-cpp",
        "hibari",
    )


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the message off Apple Silicon")
def test_mlx_refuses_other_platforms_naming_the_extra() -> None:
    with pytest.raises(RuntimeError, match=r"Apple Silicon.*speech-to-speech\[mlx\]"):
        registry.get("llm", "mlx-lm").load(*loading("llm", ServerSettings(llm="mlx-lm")))


@pytest.mark.skipif(importlib.util.find_spec("kokoro") is not None, reason="the kokoro package is installed")
def test_kokoro_without_its_package_names_the_extra() -> None:
    with pytest.raises(RuntimeError, match=r"speech-to-speech\[kokoro\]"):
        registry.get("tts", "kokoro").load(*loading("tts", ServerSettings(tts="kokoro")))


def test_kokoro_onnx_path_must_exist() -> None:
    with pytest.raises(RuntimeError, match="does not exist"):
        missing = ServerSettings(tts="kokoro", tts_model="/nonexistent/kokoro.onnx")
        registry.get("tts", "kokoro").load(*loading("tts", missing))
