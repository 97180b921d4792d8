"""The conversation a model is given: all of it, up to a token budget, cut in blocks when it outgrows it.

Why blocks: a local model keeps the prompt it read in its cache and reads
only what follows the longest prefix it still holds. A window that slides by
one exchange at every turn changes the prompt's beginning every time, and the
whole history is read again at each pause (what made turns 10+ of a
conversation four times slower). Here the window's start moves only when the
conversation outgrows the budget, and then by enough exchanges to bring it
down to ``retention_ratio`` of it, so the prefix holds for many turns after.

What a cut must not lose: the opening exchanges, where people say who they
are ("my name is Oliver, I live in Lisbon"), stay pinned before the window
(up to a share of the budget); the instructions are not counted here (the
caller takes them off the budget first).

The window is computed from the messages alone, replaying the conversation's
growth exchange by exchange: no state to keep between turns, so a session
resumed on another replica, or whose history a barge-in or a take-back
rewrote, gets the same window it would have had.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech.config import LLMSettings
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest, Truncation

# The opening exchanges pinned before the window: at most this many, and at most this share of the budget.
PINNED_EXCHANGES = 3
PINNED_SHARE = 0.2
# Tokens a chat template adds around one message (role header and end marker; Qwen's ChatML: 5).
MESSAGE_OVERHEAD = 5
CHARS_PER_TOKEN = 3  # the estimate where no tokenizer is at hand: cautious (English runs ~4)
# Counted apart, texts come out a token or two off their count inside the template: a margin for the sum.
COUNTING_MARGIN = 16
LOCAL_CONTEXT_TOKENS = 4096  # a local model's context where neither it nor the settings say


class ContextOverflow(ValueError):
    """The conversation does not fit the model's context and may not be cut (``truncation: disabled``)."""


def estimated_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class ModelContext:
    """What a model's context holds, in tokens, and how a text is counted in them."""

    tokens: int = LOCAL_CONTEXT_TOKENS
    count: Callable[[str], int] = field(default=estimated_tokens)

    @classmethod
    def of(cls, settings: LLMSettings, default_tokens: int = LOCAL_CONTEXT_TOKENS) -> ModelContext:
        """The context the settings give (``--llm_context_tokens``), else ``default_tokens``; estimated counts."""
        return cls(settings.context_tokens or default_tokens)


def fitted_history(request: GenerateResponseRequest, settings: LLMSettings, context: ModelContext, system: str,
                   tools: list[dict[str, Any]] | None = None) -> tuple[ChatMessage, ...]:
    """``request``'s conversation as far as it fits ``context`` beside the system turn (``system`` and
    ``tools``) and the answer's room; raises ContextOverflow where it may not be cut."""
    answer = request.max_output_tokens or settings.max_new_tokens
    fixed = (context.count(system) + (context.count(json.dumps(tools)) if tools else 0) + 2 * MESSAGE_OVERHEAD
             + COUNTING_MARGIN)
    budget = max(0, context.tokens - answer - fixed)
    return fit(request.messages, budget, request.truncation, context.count, settings.chat_size).messages


@dataclass(frozen=True)
class ContextWindow:
    """What the model is given: the pinned opening and the window, and how many messages between them went."""

    messages: tuple[ChatMessage, ...]
    dropped: int
    tokens: int  # the estimated cost of ``messages``


def exchanges(messages: Sequence[ChatMessage]) -> list[tuple[ChatMessage, ...]]:
    """The messages in exchanges: each begins at a user message (anything before the first is one too),
    so a cut never parts a tool call from its result or an answer from its question."""
    groups: list[list[ChatMessage]] = []
    for message in messages:
        if message.role == "user" or not groups:
            groups.append([])
        groups[-1].append(message)
    return [tuple(group) for group in groups]


def message_cost(message: ChatMessage, count: Callable[[str], int]) -> int:
    calls = "".join(call.get("name", "") + call.get("arguments", "") for call in message.tool_calls)
    return count(message.content + calls) + MESSAGE_OVERHEAD


def fit(messages: Sequence[ChatMessage], budget: int, truncation: Truncation,
        count: Callable[[str], int] = estimated_tokens, max_exchanges: int | None = None) -> ContextWindow:
    """The part of ``messages`` the model is given within ``budget`` tokens (and ``max_exchanges``).

    Raises ContextOverflow where the conversation must be cut and ``truncation`` says never to.
    """
    if truncation.post_instructions is not None:
        budget = min(budget, truncation.post_instructions)
    groups = exchanges(messages)
    costs = [sum(message_cost(m, count) for m in group) for group in groups]
    pinned = _pinned(costs, budget, max_exchanges)
    if truncation.retention_ratio is None and sum(costs) > budget:
        raise ContextOverflow(f"the conversation needs {sum(costs)} tokens and the model has room for {budget}; "
                              "the session's truncation is disabled")
    ratio = 1.0 if truncation.retention_ratio is None else truncation.retention_ratio
    start = _window_start(costs, pinned, budget, ratio, max_exchanges)
    kept = [*groups[:pinned], *groups[start:]]
    return ContextWindow(tuple(m for group in kept for m in group),
                         dropped=sum(len(group) for group in groups[pinned:start]),
                         tokens=sum(costs[:pinned]) + sum(costs[start:]))


def _pinned(costs: list[int], budget: int, max_exchanges: int | None) -> int:
    """How many opening exchanges stay whatever is cut: whole ones, within their share of the budget,
    leaving room for the newest under ``max_exchanges``.

    The exchange still going on (the last) is never pinned: pinning it would let the window start
    after it and leave the newest words out."""
    most = min(PINNED_EXCHANGES, len(costs) - 1, PINNED_EXCHANGES if max_exchanges is None else max_exchanges - 1)
    pinned, total = 0, 0
    for cost in costs[: max(0, most)]:
        if total + cost > PINNED_SHARE * budget:
            break
        pinned, total = pinned + 1, total + cost
    return pinned


def _window_start(costs: list[int], pinned: int, budget: int, ratio: float, max_exchanges: int | None) -> int:
    """Replay the conversation's growth: each time it outgrows the budget (or ``max_exchanges``), the
    oldest unpinned exchanges go until ``ratio`` of it is left; the newest exchange always stays."""
    start, total = pinned, sum(costs[:pinned])
    kept_floor = None if max_exchanges is None else max(1, math.floor(ratio * max_exchanges))
    for newest in range(pinned, len(costs)):
        total += costs[newest]
        if not _over(total, pinned + newest + 1 - start, budget, max_exchanges):
            continue
        while start < newest and _over(total, pinned + newest + 1 - start, ratio * budget, kept_floor):
            total -= costs[start]
            start += 1
    return start


def _over(tokens: int, kept: int, token_limit: float, kept_limit: int | None) -> bool:
    return tokens > token_limit or (kept_limit is not None and kept > kept_limit)
