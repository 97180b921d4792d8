"""The LLM's side of a response: the request made of it, and the parts of its answer up to the
sentinel that closes the response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from speech_to_speech.pipeline.messages.ownership import AlwaysDelivered, ResponseOwned


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    # Assistant tool calls: ({"call_id", "name", "arguments"}, ...); tool results: call_id.
    tool_calls: tuple[dict[str, str], ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Truncation:
    """How a conversation longer than the model's context is cut (the session's ``truncation``).

    ``retention_ratio``: when the conversation outgrows its budget, the oldest
    turns go at once until this share of the budget is left, so that the
    prompt's prefix, and the model's cache of it, then holds for many turns.
    None: never cut (``"disabled"``); a conversation that does not fit fails
    the response. ``post_instructions``: a budget of the client's own for
    what follows the instructions, below the model's.
    """

    retention_ratio: float | None = 0.8
    post_instructions: int | None = None


@dataclass(frozen=True)
class GenerateResponseRequest(ResponseOwned):
    messages: tuple[ChatMessage, ...]
    instructions: str | None = None
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: str | dict[str, Any] = "auto"
    reasoning_effort: str | None = None
    max_output_tokens: int | None = None
    voice: str | None = None
    language: str | None = None
    # Ids of function_call_output items the model input contains.
    input_call_ids: tuple[str, ...] = ()
    output_modalities: tuple[str, ...] = ("audio",)
    metadata: dict[str, Any] | None = None
    truncation: Truncation = Truncation()
    # What to say first when the reply reaches a tool call with nothing said (no dead air while it runs);
    # None: say nothing of our own.
    preamble: str | None = None


@dataclass(frozen=True)
class PromptPrefill:
    """The request the turn would make if it ended on the words heard so far: the LLM reads its prompt
    into its cache, ahead of the real request, and answers nothing."""

    request: GenerateResponseRequest


@dataclass(frozen=True)
class AssistantTextPart(ResponseOwned):
    text: str
    language: str | None = None  # what it is written in, where the request said (the voice speaks it)


@dataclass(frozen=True)
class Preamble(ResponseOwned):
    """A short phrase to say while the user waits ("Let me check that."), said only if nothing of the
    response was said or is on its way (the output processor decides, in order with the model's text).

    ``holding``: a phrase said later in the same wait ("Still checking."), after the preamble: said only if
    nothing of the model's own text of the request under way was said or is on its way, so it never cuts
    into the answer. ``language``: what the phrase is written in (the voice speaks it so)."""

    text: str
    holding: bool = False
    language: str | None = None


@dataclass(frozen=True)
class AssistantToolCallPart(ResponseOwned):
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class TokenUsage(ResponseOwned, AlwaysDelivered):
    input_tokens: int = 0
    output_tokens: int = 0
    # Of input_tokens, those the model had in its cache already and did not read again.
    cached_tokens: int = 0


@dataclass(frozen=True)
class LLMFirstToken(ResponseOwned):
    """Timing mark: the LLM produced its first token for a response."""

    time: float


ResponseStatus = Literal["completed", "cancelled", "incomplete", "failed"]


@dataclass(frozen=True)
class ResponseDone(ResponseOwned, AlwaysDelivered):
    """The __RESPONSE_DONE__ sentinel: closes a response on every queue it passes."""

    status: ResponseStatus = "completed"
    reason: str | None = None
    error: str | None = None
    input_call_ids: tuple[str, ...] = ()
