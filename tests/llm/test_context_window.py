"""The conversation a model is given: whole up to its budget, then cut in blocks that keep the prefix."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.chat_prompt import chat_turns
from speech_to_speech.llm.context_window import (
    ContextOverflow,
    ModelContext,
    exchanges,
    fit,
    message_cost,
)
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest, Truncation


def words(count: int) -> int:
    return count  # a count function where a text's cost is its length: costs are chosen exactly


def conversation(sizes: list[tuple[int, int]]) -> list[ChatMessage]:
    """Exchanges of a user turn and an answer of the given lengths (characters = tokens with ``len``)."""
    messages: list[ChatMessage] = []
    for index, (asked, answered) in enumerate(sizes):
        messages.append(ChatMessage("user", f"{index:03d}" + "u" * asked))
        messages.append(ChatMessage("assistant", f"{index:03d}" + "a" * answered))
    return messages


exchange_sizes = st.lists(st.tuples(st.integers(1, 60), st.integers(0, 120)), min_size=1, max_size=40)
ratios = st.floats(0.3, 1.0)


def cost(messages: tuple[ChatMessage, ...] | list[ChatMessage]) -> int:
    return sum(message_cost(m, len) for m in messages)


@given(exchange_sizes, st.integers(150, 1500), ratios)
def test_the_window_fits_the_budget_and_keeps_the_newest_exchange(sizes: list[tuple[int, int]], budget: int,
                                                                   ratio: float) -> None:
    messages = conversation(sizes)
    window = fit(messages, budget, Truncation(ratio), len)
    kept = exchanges(window.messages)
    assert kept[-1] == exchanges(messages)[-1]
    newest_alone = cost(exchanges(messages)[-1])
    if window.dropped:
        assert window.tokens <= max(budget, newest_alone + cost(kept[0]))
    else:
        assert window.messages == tuple(messages)
    assert window.tokens == cost(window.messages)


@given(exchange_sizes, st.integers(150, 1500), ratios)
def test_the_window_is_the_opening_and_one_unbroken_run_of_the_latest_exchanges(
        sizes: list[tuple[int, int]], budget: int, ratio: float) -> None:
    messages = conversation(sizes)
    window = fit(messages, budget, Truncation(ratio), len)
    groups, kept = exchanges(messages), exchanges(window.messages)
    pinned = next(i for i in range(len(kept) + 1) if i == len(kept) or kept[i] != groups[i])
    run = kept[pinned:]
    assert run == groups[len(groups) - len(run):]
    assert len(window.messages) + window.dropped == len(messages)


@given(exchange_sizes, st.integers(200, 1500), ratios)
def test_a_growing_conversation_keeps_its_prefix_between_rare_cuts(sizes: list[tuple[int, int]], budget: int,
                                                                   ratio: float) -> None:
    """What the cache needs: turn after turn, the prompt only grows, except at a cut, and cuts are rare."""
    messages = conversation(sizes)
    cuts, previous = 0, None
    for length in range(2, len(messages) + 1, 2):
        window = fit(messages[:length], budget, Truncation(ratio), len)
        if previous is not None and window.messages[: len(previous)] != previous:
            cuts += 1
            assert window.dropped > 0
        previous = window.messages
    largest = max(cost(group) for group in exchanges(messages))
    # Each cut brings the conversation down to ratio of the budget: the next needs (1 - ratio) of it to grow.
    room = max(1.0, (1 - ratio) * budget - largest)
    assert cuts <= cost(messages) / room + 1


def test_the_opening_exchange_survives_every_cut() -> None:
    messages = conversation([(40, 30)] * 60)
    window = fit(messages, 800, Truncation(0.8), len)
    assert window.dropped > 0
    assert window.messages[:2] == tuple(messages[:2])  # "my name is Oliver", and its answer
    assert window.messages[-2:] == tuple(messages[-2:])


def test_a_disabled_truncation_refuses_a_conversation_that_does_not_fit() -> None:
    messages = conversation([(40, 30)] * 10)
    assert fit(messages, 10_000, Truncation(None), len).messages == tuple(messages)
    with pytest.raises(ContextOverflow, match="truncation is disabled"):
        fit(messages, 300, Truncation(None), len)


def test_the_clients_own_token_limit_is_the_budget_when_lower() -> None:
    messages = conversation([(40, 30)] * 20)
    assert fit(messages, 10_000, Truncation(0.8, post_instructions=400), len).tokens <= 400


@given(exchange_sizes, st.integers(1, 12), ratios)
def test_chat_size_is_an_upper_bound_on_exchanges(sizes: list[tuple[int, int]], chat_size: int,
                                                  ratio: float) -> None:
    messages = conversation(sizes)
    window = fit(messages, 1_000_000, Truncation(ratio), len, max_exchanges=chat_size)
    assert len(exchanges(window.messages)) <= max(chat_size, 1)


def test_a_tool_call_is_never_parted_from_its_result() -> None:
    call = {"call_id": "c1", "name": "weather", "arguments": "{}"}
    messages = [*conversation([(40, 30)] * 8), ChatMessage("user", "Weather?"),
                ChatMessage("assistant", "", (call,)), ChatMessage("tool", "sunny", tool_call_id="c1"),
                ChatMessage("assistant", "It is sunny."), *conversation([(40, 30)] * 8)]
    for budget in range(200, 1200, 37):
        kept = fit(messages, budget, Truncation(0.5), len).messages
        assert (ChatMessage("tool", "sunny", tool_call_id="c1") in kept) == (
            ChatMessage("assistant", "", (call,)) in kept)


def test_the_prompt_holds_the_whole_conversation_when_it_fits() -> None:
    """No turn limit by default: the 30th turn's prompt still holds the first."""
    messages = conversation([(30, 40)] * 30)
    request = GenerateResponseRequest("resp", 0, tuple(messages))
    turns = chat_turns(request, ServerSettings().llm, context=ModelContext(4096, len))
    assert [turn["content"] for turn in turns[1:]] == [m.content for m in messages]
    small = chat_turns(request, ServerSettings().llm, context=ModelContext(1024, len))
    assert small[1]["content"] == messages[0].content and small[-1]["content"] == messages[-1].content
    assert len(small) < len(turns)


@settings(max_examples=25)
@given(st.integers(1, 30))
def test_a_chat_size_the_user_set_still_bounds_the_prompt(chat_size: int) -> None:
    messages = conversation([(10, 10)] * 40)
    request = GenerateResponseRequest("resp", 0, tuple(messages))
    turns = chat_turns(request, ServerSettings(chat_size=chat_size).llm, context=ModelContext(100_000, len))
    assert sum(turn["role"] == "user" for turn in turns) <= chat_size
