"""Drive a pipeline unit directly, without a protocol: for tests and benches.

Everything here reads the unit's public queues with blocking ``get(timeout)``
calls, so a test waits exactly as long as the engine needs and fails with
what it did see when something never arrives.
"""

from __future__ import annotations

import dataclasses
import queue
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.config import LoadContext, ServerSettings, settings_from_flat
from speech_to_speech.pipeline.handler import BackendHandler
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest, ResponseDone
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TranscriptText
from speech_to_speech.testing.scripted import tone
from speech_to_speech.units.builder import BackendClass, PipelineFactory, stage_builder
from speech_to_speech.units.stages import StageBuilder, StageBuilders
from speech_to_speech.units.unit import PipelineUnit

T = TypeVar("T")
Handler = TypeVar("Handler", bound=BackendHandler[Any, Any, Any])
# A fixture's unit maker: setting overrides in, a started unit out.
UnitFactory = Callable[..., PipelineUnit]
DEFAULT_TIMEOUT = 10.0


def scripted_settings(**overrides: Any) -> ServerSettings:
    """Server settings with every stage scripted (no model is loaded); ``overrides`` by flat name."""
    values: dict[str, Any] = {"vad": "scripted", "stt": "scripted", "llm": "scripted", "tts": "scripted"}
    values.update(overrides)
    return settings_from_flat(values)


@contextmanager
def running_unit(settings: ServerSettings | None = None, **overrides: Any) -> Iterator[PipelineUnit]:
    """A started unit of ``settings`` (default: all scripted), stopped on exit."""
    factory = PipelineFactory(settings or scripted_settings(**overrides))
    unit = factory.build_unit(0)
    unit.start()
    try:
        yield unit
    finally:
        unit.stop(timeout=1.0)


def backend_settings(handler: type[BackendHandler[Any, Any, Any]], settings: ServerSettings) -> dict[str, Any]:
    """The settings keywords the builder gives ``handler``: ``settings=`` its stage's section (``settings.tts``
    for a TTS), and the sections it says it needs besides (``given_sections``: the turns section for a VAD)."""
    given: dict[str, Any] = {"settings": getattr(settings, handler.stage)}
    given.update((keyword, getattr(settings, name)) for keyword, name in handler.given_sections.items())
    return given


def loading(kind: str, settings: ServerSettings) -> tuple[Any, LoadContext]:
    """A loader's arguments for ``settings``: ``load_hibari(*loading("tts", settings))``."""
    return getattr(settings, kind), LoadContext.of(settings)


def stage(handler: type[Handler], settings: ServerSettings, model: Any = None) -> StageBuilder[Any, Any, Handler]:
    """A stage builder for a custom handler class (a test double around ``model``), given its sections of
    ``settings`` as the builder gives them. Its queues are not checked against the stage it stands in for."""
    return stage_builder(cast(BackendClass[Any, Any, Handler], handler), model, backend_settings(handler, settings))


def scripted_builders(settings: ServerSettings | None = None, **stages: StageBuilder[Any, Any, Any]) -> StageBuilders:
    """The scripted stages of ``settings``, with some (vad=, stt=, llm=, tts=) replaced."""
    return dataclasses.replace(PipelineFactory(settings or scripted_settings()).builders, **stages)


def wait_until(condition: Callable[[], bool], timeout: float = DEFAULT_TIMEOUT, what: str = "condition") -> None:
    """Poll ``condition`` for state that no queue announces (pool slots, thread deaths)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.01)


# ---------------------------------------------------------------- audio


def speech(seconds: float, level: float = 0.3) -> npt.NDArray[np.float32]:
    """16 kHz audio the scripted energy VAD hears as speech (a tone)."""
    return tone(seconds, PIPELINE_RATE, level=level)


def silence(seconds: float) -> npt.NDArray[np.float32]:
    return np.zeros(int(seconds * PIPELINE_RATE), dtype=np.float32)


def turn_audio(speech_s: float = 0.6, silence_s: float = 1.0) -> npt.NDArray[np.float32]:
    """One user turn: speech, then enough silence for the VAD to end it."""
    return np.concatenate([speech(speech_s), silence(silence_s)])


# ---------------------------------------------------------------- queues


def _matcher(until: type | Callable[[Any], bool]) -> Callable[[Any], bool]:
    if isinstance(until, type):
        kind = until
        return lambda item: isinstance(item, kind)
    return until


def collect(
    source: queue.Queue[Any], until: type | Callable[[Any], bool], timeout: float = DEFAULT_TIMEOUT
) -> list[Any]:
    """Items from ``source`` up to and including the first that matches ``until``.

    ``until`` is a type or a predicate; ``timeout`` bounds each wait. Raises
    AssertionError listing what did arrive when the match never comes.
    """
    matches = _matcher(until)
    items: list[Any] = []
    while True:
        try:
            item = source.get(timeout=timeout)
        except queue.Empty:
            seen = ", ".join(type(i).__name__ for i in items) or "nothing"
            raise AssertionError(f"no match for {until!r} within {timeout} s; got {seen}") from None
        items.append(item)
        if matches(item):
            return items


def next_of(source: queue.Queue[Any], kind: type[T], timeout: float = DEFAULT_TIMEOUT) -> T:
    """The next item of type ``kind``, skipping (and dropping) the others."""
    item = collect(source, kind, timeout)[-1]
    assert isinstance(item, kind)
    return item


def drain(source: queue.Queue[Any]) -> list[Any]:
    """Everything queued right now, without waiting."""
    items: list[Any] = []
    while True:
        try:
            items.append(source.get_nowait())
        except queue.Empty:
            return items


def assert_quiet(source: queue.Queue[Any], seconds: float) -> None:
    """Fail if anything arrives on ``source`` within ``seconds``."""
    try:
        item = source.get(timeout=seconds)
    except queue.Empty:
        return
    raise AssertionError(f"expected nothing, got {item!r}")


# ---------------------------------------------------------------- responses


@dataclass
class ResponseRecord:
    """What came out of the TTS end of a unit for one response."""

    items: list[Any] = field(default_factory=list)

    @property
    def done(self) -> ResponseDone:
        last = self.items[-1]
        assert isinstance(last, ResponseDone), f"response not done: last item {last!r}"
        return last

    @property
    def text(self) -> str:
        return "".join(i.text for i in self.items if isinstance(i, TranscriptText))

    @property
    def audio(self) -> npt.NDArray[np.int16]:
        chunks = [i.samples for i in self.items if isinstance(i, AudioOutput)]
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)

    def of_type(self, kind: type[T]) -> list[T]:
        return [i for i in self.items if isinstance(i, kind)]


def collect_response(
    unit: PipelineUnit, response_id: str | None = None, timeout: float = DEFAULT_TIMEOUT
) -> ResponseRecord:
    """Output items until the ResponseDone of ``response_id`` (any response when None)."""

    def closes(item: Any) -> bool:
        return isinstance(item, ResponseDone) and response_id in (None, item.response_id)

    return ResponseRecord(collect(unit.queues.response_output, closes, timeout))


def request(
    unit: PipelineUnit, response_id: str = "resp_test", text: str = "Hello?", **fields: Any
) -> GenerateResponseRequest:
    """A GenerateResponseRequest for the unit's current generation with one user message."""
    return GenerateResponseRequest(
        response_id=response_id,
        generation=unit.cancel_scope.generation,
        messages=(ChatMessage("user", text),),
        **fields,
    )


def respond(unit: PipelineUnit, response_id: str = "resp_test", timeout: float = DEFAULT_TIMEOUT) -> ResponseRecord:
    """Submit a request for the current generation and collect its whole response."""
    unit.submit(request(unit, response_id))
    return collect_response(unit, response_id, timeout)
