"""BaseHandler: one thread per pipeline stage, mapping queue_in to queue_out.

A stage is typed by what it consumes (``In``), what it makes (``Out``) and what
it lets through unchanged (``Passed``, nothing unless said); its input queue
then carries ``In | Passed | Control`` and its output queue takes
``Out | Passed | Control``, so mypy checks each stage against the queues the
unit wires it to (pipeline/queue_items.py names them).
"""

from __future__ import annotations

import logging
import queue
import threading
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Never, cast

from typing_extensions import TypeVar

from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.messages.control import Control, PipelineEnd, SessionEnd, StageError
from speech_to_speech.pipeline.messages.ownership import AlwaysDelivered, ResponseOwned
from speech_to_speech.pipeline.queue_items import StageEvent
from speech_to_speech.pipeline.queues import Sink
from speech_to_speech.pipeline.session_config import ConfigHolder

log = logging.getLogger(__name__)

In = TypeVar("In")  # what the stage consumes: the items :meth:`BaseHandler.process` is given
Out = TypeVar("Out")  # what it makes of them
# What it lets through unchanged besides the control items (the TTS: the tool calls and usage behind the audio).
Passed = TypeVar("Passed", default=Never)


def _generation(item: object) -> int | None:
    """The generation an item was made under (None: it belongs to no response)."""
    return item.generation if isinstance(item, ResponseOwned | StageError) else None


def _consumed(cls: type) -> tuple[type, ...] | None:
    """The classes of ``cls``'s ``In``, where its own class statement names them (``STTHandler(BackendHandler[
    Utterance, Transcript])``): the run-time filter of what it consumes is the type mypy checks, stated once.
    None for a class that names none (it inherits its base's)."""
    for base in vars(cls).get("__orig_bases__", ()):
        origin = typing.get_origin(base)
        if isinstance(origin, type) and issubclass(origin, BaseHandler):
            consumed = typing.get_args(base)[0]
            kinds = typing.get_args(consumed) or (consumed,)
            return kinds if all(isinstance(kind, type) for kind in kinds) else None
    return None


@dataclass(frozen=True)
class SpeechLanguageCapabilities:
    """What a speech handler natively knows about its languages.

    ``languages=None`` means coverage is unknown; ``supports_auto=None`` unknown.
    """

    languages: tuple[str, ...] | None = None
    supports_language_selection: bool = False
    supports_auto: bool | None = None


class HandlerContext:
    """What every handler of one unit shares: the cancel scope and the live session config."""

    def __init__(self, cancel_scope: CancelScope, config: ConfigHolder) -> None:
        self.cancel_scope = cancel_scope
        self.config = config


class BaseHandler(Generic[In, Out, Passed]):
    """A stage of the pipeline, run on its own thread.

    Subclasses implement :meth:`process` for the item types they consume
    (``In``, which ``consumes`` lists at run time); every other item is
    forwarded unchanged, so control and response sentinels keep their order
    through the whole pipeline. A ``SessionEnd`` resets per-session state and
    is forwarded; ``PipelineEnd`` stops the thread (and is forwarded so the
    next stage stops too).

    An exception in :meth:`process` never kills the thread: the failure is
    logged, turned into items by :meth:`on_error` (a ``StageError`` by
    default) and the loop goes on with the next item.
    """

    stage: ClassVar[str] = "handler"
    # The classes of In, taken from the class statement; a handler whose In is not named there (Any) lists them.
    consumes: ClassVar[tuple[type, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        consumed = _consumed(cls)
        if consumed is not None and "consumes" not in vars(cls):
            cls.consumes = consumed

    def __init__(
        self,
        context: HandlerContext,
        queue_in: queue.Queue[In | Passed | Control],
        queue_out: Sink[Out | Passed | Control] | None,
    ) -> None:
        self.context = context
        self.queue_in = queue_in
        self.queue_out = queue_out
        self.thread: threading.Thread | None = None
        self.failures = 0

    # ------------------------------------------------------------ to override

    def process(self, item: In) -> Iterable[Out]:
        raise NotImplementedError

    def on_session_end(self) -> None:
        """Forget per-session state (VAD buffers, partial hypotheses, …)."""

    def on_error(self, item: In, error: BaseException) -> Iterable[Out | StageError]:
        yield StageError(
            stage=self.stage,
            message=f"{type(error).__name__}: {error}",
            generation=_generation(item),
            response_id=item.response_id if isinstance(item, ResponseOwned | StageError) else None,
            item_id=getattr(item, "item_id", None),
        )

    def on_stale(self, item: In) -> Iterable[Out]:
        """What still goes out for a consumed item that is dropped as stale (nothing, unless a stage says)."""
        return ()

    def is_stale(self, item: object) -> bool:
        if isinstance(item, AlwaysDelivered):
            return False
        generation = _generation(item)
        return generation is not None and self.context.cancel_scope.is_stale(generation)

    # ------------------------------------------------------------ machinery

    @property
    def cancel_scope(self) -> CancelScope:
        return self.context.cancel_scope

    def emit(self, item: Out | Passed | Control) -> None:
        """Queue an output; content of a cancelled generation is dropped here, atomically."""
        if self.queue_out is None:
            return
        generation = _generation(item)
        if generation is None or isinstance(item, AlwaysDelivered):
            self.queue_out.put(item)
        elif not self.cancel_scope.put_if_current(self.queue_out, item, generation):
            log.debug("%s drops stale output %s", self.stage, type(item).__name__)

    def start(self, name: str) -> None:
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def is_alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def run(self) -> None:
        while True:
            item = self.queue_in.get()
            for output in self.outputs(item):
                self.emit(output)
            if isinstance(item, PipelineEnd):
                return

    def outputs(self, item: In | Passed | Control) -> Iterator[Out | Passed | Control]:
        """Everything one input item turns into, in order, for :meth:`emit`.

        Lazy, so that each output is queued as soon as it exists (the thread
        emits them one by one, and a test scheduler may step through them).
        """
        if isinstance(item, PipelineEnd):
            yield item
        elif isinstance(item, SessionEnd):
            self._guarded(self.on_session_end)
            yield item
        elif not isinstance(item, self.consumes):
            # ``consumes`` is In's classes (__init_subclass__), so what is not consumed is Passed or Control.
            yield cast("Passed | Control", item)
        elif self.is_stale(item):
            log.debug("%s drops stale %s", self.stage, type(item).__name__)
            yield from self._guarded_iter(self.on_stale(cast(In, item)))
        else:
            consumed = cast(In, item)
            try:
                yield from self.process(consumed)
            except Exception as error:  # a stage must survive any model failure
                self.failures += 1
                log.exception("%s failed on %s", self.stage, type(item).__name__)
                yield from self._guarded_iter(self.on_error(consumed, error))

    def _guarded(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:
            log.exception("%s: session reset failed", self.stage)

    def _guarded_iter(self, items: Iterable[Out | StageError]) -> list[Out | StageError]:
        try:
            return list(items)
        except Exception:
            log.exception("%s: error report failed", self.stage)
            return []


class BackendHandler(BaseHandler[In, Out, Passed]):
    """A handler built around a shared, already loaded model.

    ``model`` is whatever the backend's loader returned (shared by every
    unit of the process); ``settings`` the section of its kind (``settings.stt``
    for an STT, see :attr:`given_sections` for others); ``events`` is the unit's
    stage_events queue for
    stages that report events beside their main output (the VAD).
    """

    # Sections of the server settings it is given besides its own (``settings``), keyword -> section:
    # the VAD ends turns, so it is given ``turn_settings=`` the turns section. Its __init__ takes the keywords.
    given_sections: ClassVar[dict[str, str]] = {}

    def __init__(
        self,
        context: HandlerContext,
        queue_in: queue.Queue[In | Passed | Control],
        queue_out: Sink[Out | Passed | Control] | None,
        *,
        model: Any,
        settings: Any,
        events: Sink[StageEvent] | None = None,
    ) -> None:
        super().__init__(context, queue_in, queue_out)
        self.model = model
        self.settings = settings
        self.events = events

    @property
    def language_capabilities(self) -> SpeechLanguageCapabilities:
        """Native language metadata; speech backends override it."""
        return SpeechLanguageCapabilities()

    def emit_event(self, item: StageEvent) -> None:
        if self.events is not None:
            self.events.put(item)
