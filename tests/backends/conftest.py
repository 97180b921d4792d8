"""Shared pieces of the backend tests: real offline models, loaded once per test session."""

from __future__ import annotations

import queue
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import BackendHandler, HandlerContext
from speech_to_speech.pipeline.session_config import ConfigHolder, RuntimeConfig
from speech_to_speech.testing.engine import backend_settings, loading

H = TypeVar("H", bound=BackendHandler)


def _make_handler(
    cls: type[H], model: Any, settings: ServerSettings | None = None, config: RuntimeConfig | None = None
) -> H:
    """A handler outside any thread: tests call ``process`` directly and read ``events``."""
    context = HandlerContext(CancelScope(), ConfigHolder(config))
    return cls(
        context,
        queue.Queue(),
        queue.Queue(),
        model=model,
        events=queue.Queue(),
        **backend_settings(cls, settings or ServerSettings()),
    )


@pytest.fixture
def make_handler() -> Any:
    return _make_handler


@pytest.fixture
def sentence() -> str:
    return "The quick brown fox jumps over the lazy dog near the river bank."


@pytest.fixture(scope="session")
def hibari_voices() -> Any:
    from speech_to_speech.tts.hibari import load_hibari

    return load_hibari(*loading("tts", ServerSettings()))


@pytest.fixture(scope="session")
def whisper() -> Any:
    from speech_to_speech.stt.faster_whisper import load_faster_whisper

    return load_faster_whisper(*loading("stt", ServerSettings()))


@pytest.fixture(scope="session")
def lm() -> Any:
    """The transformers backend's model (SmolLM2 in float32 on torch)."""
    from speech_to_speech.llm.transformers_lm import load_transformers

    return load_transformers(*loading("llm", ServerSettings(llm="transformers")))


@pytest.fixture(scope="session")
def ct2_lm() -> Any:
    """The ctranslate2 backend's model (SmolLM2 in int8 on CTranslate2)."""
    from speech_to_speech.llm.ctranslate2_lm import load_ctranslate2

    return load_ctranslate2(*loading("llm", ServerSettings(num_pipelines=2)))


@pytest.fixture(scope="session")
def llama_lm() -> Any:
    """The default LLM backend's model (the packaged Q4_1 GGUF rewritten once as Q8_0, on llama.cpp)."""
    from speech_to_speech.llm.llama_cpp_lm import load_llama_cpp

    return load_llama_cpp(*loading("llm", ServerSettings(llm="llama-cpp")))


@pytest.fixture(params=["ctranslate2", "transformers", "llama-cpp"])
def local_llm(request: pytest.FixtureRequest) -> tuple[type, Any]:
    """Each local LLM backend as (handler class, loaded model): the same behaviour is asked of all."""
    from speech_to_speech.llm.ctranslate2_lm import CTranslate2LM
    from speech_to_speech.llm.llama_cpp_lm import LlamaCppLM
    from speech_to_speech.llm.transformers_lm import TransformersLM

    if request.param == "ctranslate2":
        return CTranslate2LM, request.getfixturevalue("ct2_lm")
    if request.param == "llama-cpp":
        return LlamaCppLM, request.getfixturevalue("llama_lm")
    return TransformersLM, request.getfixturevalue("lm")


@pytest.fixture
def prompt_template() -> Any:
    """model -> what it renders chat prompts with: its tokenizer, or the chat template in its GGUF."""
    return lambda model: getattr(model, "template", None) or model.tokenizer


@pytest.fixture(scope="session")
def spoken(hibari_voices: Any) -> Any:
    """Text -> 16 kHz speech synthesised by hibari (fixed seed, so runs are repeatable)."""

    def speak(text: str) -> npt.NDArray[np.float32]:
        audio = hibari_voices.get(None)(text, seed=0)
        return resample(audio, 24000, 16000)

    return speak
