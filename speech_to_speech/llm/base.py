"""LLMHandler: a GenerateResponseRequest in, ordered assistant parts out.

Backends implement ``generate``: a stream of text chunks (str), tool calls
(AssistantToolCallPart), usage (TokenUsage) and at most one ``Terminal``.
This base stamps every part with the request's generation, stops as soon as
that generation is stale, and always ends with exactly one ResponseDone so
the response closes on every queue behind it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

from speech_to_speech.config import LLMSettings
from speech_to_speech.llm.answer_language import answer_in_language
from speech_to_speech.llm.context_window import ContextOverflow
from speech_to_speech.llm.speakable import speaks_latin_only
from speech_to_speech.pipeline.handler import BackendHandler
from speech_to_speech.pipeline.messages.control import StageError
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    AssistantToolCallPart,
    GenerateResponseRequest,
    LLMFirstToken,
    Preamble,
    PromptPrefill,
    ResponseDone,
    ResponseStatus,
    TokenUsage,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Terminal:
    """How a provider ended a response, when it was not a plain completion."""

    status: ResponseStatus
    reason: str | None = None
    error: str | None = None


GeneratedPart = str | AssistantToolCallPart | TokenUsage | Terminal
# What the LLM makes of a request: the reply's parts in order, and the sentinel that closes it.
ReplyPart = AssistantTextPart | AssistantToolCallPart | Preamble | TokenUsage | LLMFirstToken | ResponseDone


class LLMHandler(BackendHandler[GenerateResponseRequest | PromptPrefill, ReplyPart]):
    stage = "llm"
    settings: LLMSettings  # the llm section
    # The languages the unit's voice speaks (its TTS says; None: unknown), set when the unit is built.
    voice_languages: tuple[str, ...] | None = None

    def speaks_in_latin_script(self, request: GenerateResponseRequest) -> bool:
        """The reply will be spoken by a voice of Latin-script languages only (see :mod:`.speakable`): the
        voice of the language it is asked in, or, where none is, any of the unit's voices."""
        if "audio" not in request.output_modalities:
            return False
        return speaks_latin_only((request.language,) if request.language else self.voice_languages)

    def in_its_language(self, request: GenerateResponseRequest) -> GenerateResponseRequest:
        """``request`` as the model is asked it: in the language of its reply (see :mod:`.answer_language`)."""
        return answer_in_language(request, self.voice_languages, self.settings.init_chat_prompt)

    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        raise NotImplementedError

    def prefill(self, request: GenerateResponseRequest) -> None:
        """Read ``request``'s prompt ahead into the backend's cache, answering nothing (a backend without
        one does nothing). It must give way at once to a request waiting behind it."""

    def process(self, item: GenerateResponseRequest | PromptPrefill) -> Iterator[ReplyPart]:
        if isinstance(item, PromptPrefill):
            if self.queue_in.empty():  # a request behind it makes it moot: the request reads the prompt
                with contextlib.suppress(ContextOverflow):  # the request itself will fail, and say why
                    self.prefill(self.in_its_language(item.request))
            return
        item = self.in_its_language(item)
        generation, response_id = item.generation, item.response_id
        terminal = Terminal("completed")
        first = True
        said = False
        parts = self.generate(item)
        try:
            for part in parts:
                if self.cancel_scope.is_stale(generation):
                    terminal = Terminal("cancelled")
                    break
                if isinstance(part, Terminal):
                    terminal = part
                    break
                if first:
                    first = False
                    yield LLMFirstToken(response_id, generation, time.monotonic())
                if isinstance(part, str):
                    if part:
                        said = said or bool(part.strip())
                        yield AssistantTextPart(response_id, generation, part, item.language)
                    continue
                if isinstance(part, AssistantToolCallPart) and not said and item.preamble:
                    said = True  # a call with nothing said: the user hears a preamble while it runs
                    yield Preamble(response_id, generation, item.preamble, language=item.language)
                yield part
        except ContextOverflow as overflow:  # the session asked never to cut: the response says why it failed
            terminal = Terminal("failed", error=str(overflow))
        finally:
            close = getattr(parts, "close", None)
            if close is not None:
                close()
        yield ResponseDone(
            response_id,
            generation,
            status=terminal.status,
            reason=terminal.reason,
            error=terminal.error,
            input_call_ids=item.input_call_ids,
        )

    def on_stale(self, item: GenerateResponseRequest | PromptPrefill) -> Iterator[ResponseDone]:
        """A response request dropped unprocessed still closes its response, so whoever waits for that
        response's sentinel is not left waiting."""
        if isinstance(item, GenerateResponseRequest):
            yield ResponseDone(
                item.response_id, item.generation, status="cancelled", input_call_ids=item.input_call_ids
            )

    def on_error(self, item: GenerateResponseRequest | PromptPrefill, error: BaseException) -> Iterator[
            ReplyPart | StageError]:
        if isinstance(item, GenerateResponseRequest):
            yield ResponseDone(
                item.response_id,
                item.generation,
                status="failed",
                error=f"{type(error).__name__}: {error}",
            )
        else:
            yield from super().on_error(item, error)
