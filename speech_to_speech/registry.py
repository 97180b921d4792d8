"""Backends registered by name: ``--vad``, ``--stt``, ``--llm``, ``--tts``.

A backend is a loader (run once per process; its result, the model, is
shared by every pipeline unit) and a handler class built per unit around
that model. Modules register themselves on import (:func:`register`), and are
imported only when their backend is chosen, so an optional backend's missing
extra fails only then.

Backends of other packages are chosen the same ways as ours (docs/backends.md):
by name, when the package declares them as entry points of the
``speech_to_speech.backends`` group (``stt.my-stt = my_package.stt``: the
module that registers ``my-stt``), or by ``module:Class`` path
(``--stt my_package.stt:MySTT``), for code that is not installed as a package.

Each backend is given its own section of the settings, never the whole:
the loader ``load(section, context)`` (``context``: a :class:`LoadContext`,
the device, the number of units, the scripted backends' knobs), the handler
``settings=section``, and the other sections its class names in
``given_sections`` (a VAD handler ``turn_settings=``, the turns section: it
ends turns). The sections of the kinds: :data:`SECTION_OF`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args

from speech_to_speech.config import LLMSettings, LoadContext, STTSettings, TTSSettings, VADSettings
from speech_to_speech.pipeline.handler import BackendHandler

Kind = Literal["vad", "stt", "llm", "tts"]
ENTRY_POINT_GROUP = "speech_to_speech.backends"
# The section a backend of each kind is given (``settings.<kind>``), its loader and its handler alike.
SECTION_OF: dict[Kind, type] = {"vad": VADSettings, "stt": STTSettings, "llm": LLMSettings, "tts": TTSSettings}
# A loader: (its kind's section, the LoadContext) -> the model its handlers share.
Loader = Callable[[Any, LoadContext], Any]
Handler = TypeVar("Handler", bound=type[BackendHandler[Any, Any, Any]])


@dataclass(frozen=True)
class Backend:
    kind: Kind
    name: str
    load: Loader
    # The subclass of its stage's base class (STTHandler for an STT) built per unit: (context, queue_in, queue_out,
    # model=, settings=<section>, events=).
    handler: type[BackendHandler[Any, Any, Any]]


_BACKENDS: dict[tuple[Kind, str], Backend] = {}

# name -> module that registers it; imported only when that backend is chosen. The scripted ones come from
# the package's own entry points (pyproject.toml), as another package's backends would.
_MODULES: dict[tuple[Kind, str], str] = {
    ("vad", "silero"): "speech_to_speech.vad.silero",
    ("stt", "faster-whisper"): "speech_to_speech.stt.faster_whisper",
    ("stt", "moonshine"): "speech_to_speech.stt.moonshine",
    ("stt", "openai"): "speech_to_speech.stt.openai_api",
    ("llm", "ctranslate2"): "speech_to_speech.llm.ctranslate2_lm",
    ("llm", "transformers"): "speech_to_speech.llm.transformers_lm",
    ("llm", "llama-cpp"): "speech_to_speech.llm.llama_cpp_lm",
    ("llm", "mlx-lm"): "speech_to_speech.llm.mlx_lm",
    ("llm", "chat-completions"): "speech_to_speech.llm.chat_completions",
    ("llm", "responses-api"): "speech_to_speech.llm.responses_api",
    ("tts", "hibari"): "speech_to_speech.tts.hibari",
    ("tts", "kokoro"): "speech_to_speech.tts.kokoro",
    ("tts", "multilingual"): "speech_to_speech.tts.multilingual",
    ("tts", "openai"): "speech_to_speech.tts.openai_api",
}


def _takes_context(load: Callable[..., Any]) -> bool:
    """Whether ``load`` takes the LoadContext after the section (a loader of one argument takes the section only)."""
    try:
        parameters = inspect.signature(load).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): called as a loader is
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def register(kind: Kind, name: str, load: Callable[..., Any]) -> Callable[[Handler], Handler]:
    """Register ``handler`` as ``kind`` backend ``name``, its model made by ``load(section, context)``
    (or ``load(section)``: a loader that needs nothing but its section)."""
    loader: Loader = load if _takes_context(load) else lambda section, context: load(section)

    def decorate(handler: Handler) -> Handler:
        _BACKENDS[(kind, name)] = Backend(kind, name, loader, handler)
        return handler

    return decorate


def _declared() -> dict[tuple[Kind, str], str]:
    """Our backends and those other packages declare: (kind, name) -> the module that registers it."""
    modules = dict(_MODULES)
    kinds: tuple[Kind, ...] = get_args(Kind)
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        kind, _, name = entry.name.partition(".")
        if kind in kinds and name and (kind, name) not in _MODULES:  # ours keep their names
            modules[(kind, name)] = entry.module
    return modules


def names(kind: Kind) -> list[str]:
    return sorted(name for k, name in _declared() if k == kind)


def is_path(name: str) -> bool:
    """``module:Class``: a handler class chosen by where it is, not by a registered name."""
    module, _, attribute = name.partition(":")
    return bool(module and attribute)


def known(kind: Kind, name: str) -> bool:
    """A name that :func:`get` can look up without importing anything yet (a path is checked on use)."""
    return is_path(name) or name in names(kind)


def get(kind: Kind, name: str) -> Backend:
    if is_path(name):
        return _by_path(kind, name)
    key = (kind, name)
    if key not in _BACKENDS:
        module = _declared().get(key)
        if module is None:
            raise ValueError(f"unknown {kind} backend {name!r}; choose one of {names(kind)}, or a module:Class")
        importlib.import_module(module)
    if key not in _BACKENDS:
        raise ValueError(f"{module} did not register the {kind} backend {name!r}")
    return _BACKENDS[key]


def _by_path(kind: Kind, path: str) -> Backend:
    module, _, attribute = path.partition(":")
    try:
        handler = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"{kind} backend {path!r}: {error}") from error
    for backend in _BACKENDS.values():
        if backend.handler is handler and backend.kind == kind:
            return backend
    raise ValueError(f"{path} is not a registered {kind} backend: decorate the class with "
                     f"speech_to_speech.registry.register({kind!r}, name, load)")
