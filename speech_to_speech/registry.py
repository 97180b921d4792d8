"""Backends registered by name: ``--vad``, ``--stt``, ``--llm``, ``--tts``.

A backend is a loader (run once per process; its result, the model, is
shared by every pipeline unit) and a handler class built per unit around
that model. Modules register themselves on import; ``load_backends()``
imports them lazily so an optional backend's missing extra only fails when
it is chosen.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from speech_to_speech.config import ServerSettings

Kind = Literal["vad", "stt", "llm", "tts"]


@dataclass(frozen=True)
class Backend:
    kind: Kind
    name: str
    load: Callable[[ServerSettings], Any]
    handler: type  # a BaseHandler subclass: (context, queue_in, queue_out, model, settings)


_BACKENDS: dict[tuple[Kind, str], Backend] = {}

# name -> module that registers it; imported only when that backend is chosen.
_MODULES: dict[tuple[Kind, str], str] = {
    ("vad", "silero"): "speech_to_speech.vad.silero",
    ("vad", "scripted"): "speech_to_speech.testing.scripted",
    ("stt", "faster-whisper"): "speech_to_speech.stt.faster_whisper",
    ("stt", "moonshine"): "speech_to_speech.stt.moonshine",
    ("stt", "openai"): "speech_to_speech.stt.openai_api",
    ("stt", "scripted"): "speech_to_speech.testing.scripted",
    ("llm", "ctranslate2"): "speech_to_speech.llm.ctranslate2_lm",
    ("llm", "transformers"): "speech_to_speech.llm.transformers_lm",
    ("llm", "llama-cpp"): "speech_to_speech.llm.llama_cpp_lm",
    ("llm", "mlx-lm"): "speech_to_speech.llm.mlx_lm",
    ("llm", "chat-completions"): "speech_to_speech.llm.chat_completions",
    ("llm", "responses-api"): "speech_to_speech.llm.responses_api",
    ("llm", "scripted"): "speech_to_speech.testing.scripted",
    ("tts", "hibari"): "speech_to_speech.tts.hibari",
    ("tts", "kokoro"): "speech_to_speech.tts.kokoro",
    ("tts", "openai"): "speech_to_speech.tts.openai_api",
    ("tts", "scripted"): "speech_to_speech.testing.scripted",
}


def register(kind: Kind, name: str, load: Callable[[ServerSettings], Any]) -> Callable[[type], type]:
    def decorate(handler: type) -> type:
        _BACKENDS[(kind, name)] = Backend(kind, name, load, handler)
        return handler

    return decorate


def names(kind: Kind) -> list[str]:
    return sorted(name for k, name in _MODULES if k == kind)


def get(kind: Kind, name: str) -> Backend:
    key = (kind, name)
    if key not in _BACKENDS:
        module = _MODULES.get(key)
        if module is None:
            raise ValueError(f"unknown {kind} backend {name!r}; choose one of {names(kind)}")
        importlib.import_module(module)
    if key not in _BACKENDS:
        raise ValueError(f"{module} did not register the {kind} backend {name!r}")
    return _BACKENDS[key]
