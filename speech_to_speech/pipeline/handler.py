"""BaseHandler: one thread per pipeline stage, mapping queue_in to queue_out."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.messages.control import PipelineEnd, SessionEnd, StageError
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest, ResponseDone
from speech_to_speech.pipeline.messages.ownership import AlwaysDelivered, ResponseOwned
from speech_to_speech.pipeline.session_config import ConfigHolder

log = logging.getLogger(__name__)



def _generation(item: Any) -> int | None:
    """The generation an item was made under (None: it belongs to no response)."""
    return item.generation if isinstance(item, ResponseOwned | StageError) else None


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


class BaseHandler:
    """A stage of the pipeline, run on its own thread.

    Subclasses implement :meth:`process` for the item types they consume
    (``consumes``); every other item is forwarded unchanged, so control and
    response sentinels keep their order through the whole pipeline. A
    ``SessionEnd`` resets per-session state and is forwarded; ``PipelineEnd``
    stops the thread (and is forwarded so the next stage stops too).

    An exception in :meth:`process` never kills the thread: the failure is
    logged, turned into items by :meth:`on_error` (a ``StageError`` by
    default) and the loop goes on with the next item.
    """

    stage: ClassVar[str] = "handler"
    consumes: ClassVar[tuple[type, ...]] = ()

    def __init__(
        self,
        context: HandlerContext,
        queue_in: queue.Queue[Any],
        queue_out: queue.Queue[Any] | None,
    ) -> None:
        self.context = context
        self.queue_in = queue_in
        self.queue_out = queue_out
        self.thread: threading.Thread | None = None
        self.failures = 0

    # ------------------------------------------------------------ to override

    def process(self, item: Any) -> Iterable[Any]:
        raise NotImplementedError

    def on_session_end(self) -> None:
        """Forget per-session state (VAD buffers, partial hypotheses, …)."""

    def on_error(self, item: Any, error: BaseException) -> Iterable[Any]:
        yield StageError(
            stage=self.stage,
            message=f"{type(error).__name__}: {error}",
            generation=_generation(item),
            response_id=item.response_id if isinstance(item, ResponseOwned | StageError) else None,
            item_id=getattr(item, "item_id", None),
        )

    def on_stale(self, item: Any) -> Iterable[Any]:
        """What still goes out for a consumed item that is dropped as stale.

        A response request dropped unprocessed still closes its response, so
        whoever waits for that response's sentinel is not left waiting.
        """
        if isinstance(item, GenerateResponseRequest):
            yield ResponseDone(
                item.response_id, item.generation, status="cancelled", input_call_ids=item.input_call_ids
            )

    def is_stale(self, item: Any) -> bool:
        if isinstance(item, AlwaysDelivered):
            return False
        generation = _generation(item)
        return generation is not None and self.context.cancel_scope.is_stale(generation)

    # ------------------------------------------------------------ machinery

    @property
    def cancel_scope(self) -> CancelScope:
        return self.context.cancel_scope

    def emit(self, item: Any) -> None:
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

    def outputs(self, item: Any) -> Iterator[Any]:
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
            yield item
        elif self.is_stale(item):
            log.debug("%s drops stale %s", self.stage, type(item).__name__)
            yield from self._guarded_iter(self.on_stale(item))
        else:
            try:
                yield from self.process(item)
            except Exception as error:  # a stage must survive any model failure
                self.failures += 1
                log.exception("%s failed on %s", self.stage, type(item).__name__)
                yield from self._guarded_iter(self.on_error(item, error))

    def _guarded(self, fn: Any) -> None:
        try:
            fn()
        except Exception:
            log.exception("%s: session reset failed", self.stage)

    def _guarded_iter(self, items: Iterable[Any]) -> list[Any]:
        try:
            return list(items)
        except Exception:
            log.exception("%s: error report failed", self.stage)
            return []


class BackendHandler(BaseHandler):
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
        queue_in: queue.Queue[Any],
        queue_out: queue.Queue[Any] | None,
        *,
        model: Any,
        settings: Any,
        events: queue.Queue[Any] | None = None,
    ) -> None:
        super().__init__(context, queue_in, queue_out)
        self.model = model
        self.settings = settings
        self.events = events

    @property
    def language_capabilities(self) -> SpeechLanguageCapabilities:
        """Native language metadata; speech backends override it."""
        return SpeechLanguageCapabilities()

    def emit_event(self, item: Any) -> None:
        if self.events is not None:
            self.events.put(item)
