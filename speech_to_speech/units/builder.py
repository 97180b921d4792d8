"""Build pipeline units from server settings: load each backend once, share it."""

from __future__ import annotations

import logging
import queue
import time
from typing import Any, Protocol, TypeVar, cast

from speech_to_speech import registry
from speech_to_speech.config import LoadContext, ServerSettings
from speech_to_speech.llm.base import LLMHandler
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.queue_items import ResponseOutput, StageEvent, TTSOutput
from speech_to_speech.pipeline.queues import Sink
from speech_to_speech.pool_size import pool_size
from speech_to_speech.stt.base import STTHandler
from speech_to_speech.tts.base import TTSHandler
from speech_to_speech.units.stages import StageBuilder, StageBuilders
from speech_to_speech.units.unit import PipelineUnit
from speech_to_speech.vad.base import VADHandler
from speech_to_speech.vad.turn_detector import load_turn_detector
from speech_to_speech.visemes.stage import VisemeStage

log = logging.getLogger(__name__)

Taken = TypeVar("Taken")
Put = TypeVar("Put", covariant=True)
Handler = TypeVar("Handler", covariant=True)


class BackendClass(Protocol[Taken, Put, Handler]):
    """A backend's handler class as a builder calls it, typed by the queues its constructor takes."""

    def __call__(self, context: HandlerContext, queue_in: queue.Queue[Taken], queue_out: Sink[Put] | None, /, *,
                 model: Any, settings: Any, events: Sink[StageEvent] | None = ...) -> Handler: ...


def stage_builder(handler: BackendClass[Taken, Put, Handler], model: Any,
                  given: dict[str, Any]) -> StageBuilder[Taken, Put, Handler]:
    """A builder of ``handler`` per unit around ``model``, given ``given`` as keywords: ``settings=`` its section
    and the others it asks for (``given_sections``), and what the units share (the VAD's turn detector)."""

    def build(context: HandlerContext, queue_in: queue.Queue[Taken], queue_out: Sink[Put],
              events: Sink[StageEvent]) -> Handler:
        return handler(context, queue_in, queue_out, model=model, events=events, **given)

    return build


def _stage(backend: registry.Backend, base: BackendClass[Taken, Put, Handler], settings: ServerSettings,
           load_times: dict[str, float], **shared: Any) -> StageBuilder[Taken, Put, Handler]:
    """Load ``backend``'s model once; the builder makes its handler per unit around it (and ``shared``).

    Its handler class subclasses its stage's ``base`` (docs/backends.md), so it is built, and typed, as the
    base is: mypy checks the base against the queues the unit wires it to. The backend is given its own
    section of ``settings`` (``settings.stt`` for the STT), and its loader the :class:`LoadContext` besides:
    the device, the units, the scripted backends' knobs.
    """
    handler = backend.handler
    if not (isinstance(base, type) and issubclass(handler, base)):
        raise TypeError(f"{backend.kind} backend {backend.name!r}: {handler.__qualname__} does not subclass "
                        f"{getattr(base, '__qualname__', base)}")
    section = getattr(settings, backend.kind)
    started = time.perf_counter()
    model = backend.load(section, LoadContext.of(settings))
    # The sections it needs beside its own, by its own say (the VAD: the turns section, as it ends turns).
    given = {keyword: getattr(settings, name) for keyword, name in handler.given_sections.items()}
    load_times[backend.kind] = time.perf_counter() - started
    log.info("%s backend %r loaded in %.2f s", backend.kind, backend.name, load_times[backend.kind])
    built_as_base = cast(BackendClass[Taken, Put, Handler], handler)
    return stage_builder(built_as_base, model, {"settings": section} | given | shared)


def _viseme_stage(context: HandlerContext, queue_in: queue.Queue[TTSOutput], queue_out: Sink[ResponseOutput],
                  events: Sink[StageEvent]) -> VisemeStage:
    return VisemeStage(context, queue_in, queue_out)


class PipelineFactory:
    """Loads the models of ``settings`` once; ``build_unit(i)`` costs no model load."""

    def __init__(self, settings: ServerSettings) -> None:
        # "auto" is sized here, once: the loaders size their worker pools by the number it becomes.
        self.size = pool_size(settings.server.num_pipelines)
        settings = settings.updated(num_pipelines=self.size.units)
        self.settings = settings
        self.load_times: dict[str, float] = {}
        started = time.perf_counter()
        vad = registry.get("vad", settings.vad.backend)
        # A VAD that hears only loudness (the scripted one) gives the turn model nothing to judge.
        hears_speech = issubclass(vad.handler, VADHandler) and vad.handler.hears_speech
        self.turn_detector = load_turn_detector(settings.turns, self.size.units) if hears_speech else None
        self.load_times["turn_detector"] = time.perf_counter() - started
        self.builders = StageBuilders(
            vad=_stage(vad, VADHandler, settings, self.load_times, turn_detector=self.turn_detector),
            stt=_stage(registry.get("stt", settings.stt.backend), STTHandler, settings, self.load_times),
            llm=_stage(registry.get("llm", settings.llm.backend), LLMHandler, settings, self.load_times),
            tts=_stage(registry.get("tts", settings.tts.backend), TTSHandler, settings, self.load_times),
            visemes=_viseme_stage if settings.tts.enable_visemes else None,
        )

    def close(self) -> None:
        """Stop what the units share beyond their own threads."""
        if self.turn_detector is not None:
            self.turn_detector.close()

    def build_unit(self, index: int) -> PipelineUnit:
        return PipelineUnit(index, self.builders, first_chunk_words=self.settings.llm.first_chunk_words,
                            voice_languages=self.settings.tts.supported_languages)
