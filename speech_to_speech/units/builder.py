"""Build pipeline units from server settings: load each backend once, share it."""

from __future__ import annotations

import logging
import time
from typing import Any

from speech_to_speech import registry
from speech_to_speech.config import LoadContext, ServerSettings
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pool_size import pool_size
from speech_to_speech.units.unit import PipelineUnit, StageBuilder, StageBuilders
from speech_to_speech.vad.turn_detector import load_turn_detector
from speech_to_speech.visemes.stage import VisemeStage

log = logging.getLogger(__name__)


def _stage(kind: registry.Kind, settings: ServerSettings, load_times: dict[str, float],
           **shared: Any) -> StageBuilder:
    """Load ``kind``'s backend once; the builder makes a handler per unit around it (and ``shared``).

    The backend is given its own section of ``settings`` (``settings.stt`` for the STT), and its loader
    the :class:`LoadContext` besides: the device, the units, the scripted backends' knobs.
    """
    section = getattr(settings, kind)
    name = section.backend
    backend = registry.get(kind, name)
    started = time.perf_counter()
    model = backend.load(section, LoadContext.of(settings))
    # The sections it needs beside its own, by its own say (the VAD: the turns section, as it ends turns).
    shared = {keyword: getattr(settings, name) for keyword, name in given_sections(backend.handler).items()} | shared
    load_times[kind] = time.perf_counter() - started
    log.info("%s backend %r loaded in %.2f s", kind, name, load_times[kind])

    def build(context: HandlerContext, queue_in: Any, queue_out: Any, events: Any) -> Any:
        return backend.handler(context, queue_in, queue_out, model=model, settings=section, events=events,
                               **shared)

    return build


def given_sections(handler: type) -> dict[str, str]:
    """The sections ``handler`` is given besides its own, keyword -> section (``BackendHandler.given_sections``)."""
    sections: dict[str, str] = getattr(handler, "given_sections", {})
    return sections


def _viseme_stage(context: HandlerContext, queue_in: Any, queue_out: Any, events: Any) -> VisemeStage:
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
        # A VAD that hears only loudness (the scripted one) gives the turn model nothing to judge.
        hears_speech = bool(getattr(registry.get("vad", settings.vad.backend).handler, "hears_speech", True))
        self.turn_detector = load_turn_detector(settings.turns, self.size.units) if hears_speech else None
        self.load_times["turn_detector"] = time.perf_counter() - started
        self.builders = StageBuilders(
            vad=_stage("vad", settings, self.load_times, turn_detector=self.turn_detector),
            stt=_stage("stt", settings, self.load_times),
            llm=_stage("llm", settings, self.load_times),
            tts=_stage("tts", settings, self.load_times),
            visemes=_viseme_stage if settings.tts.enable_visemes else None,
        )

    def close(self) -> None:
        """Stop what the units share beyond their own threads."""
        if self.turn_detector is not None:
            self.turn_detector.close()

    def build_unit(self, index: int) -> PipelineUnit:
        return PipelineUnit(index, self.builders, first_chunk_words=self.settings.llm.first_chunk_words,
                            voice_languages=self.settings.tts.supported_languages)
