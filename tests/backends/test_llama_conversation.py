"""A long conversation on llama.cpp: cut in blocks to its context, each turn reading only its new words."""

from __future__ import annotations

from typing import Any

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.chat_prompt import prompt_for
from speech_to_speech.llm.llama_cpp_lm import LlamaCppLM, LoadedLlama, load_llama_cpp
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    ChatMessage,
    GenerateResponseRequest,
    ResponseDone,
    TokenUsage,
    Truncation,
)
from speech_to_speech.testing.engine import loading

pytestmark = pytest.mark.real_models

AUTO = Truncation()
CONTEXT = 512  # small, so that a few dozen turns are cut several times
ANSWER = 8


@pytest.fixture(scope="module")
def small_context() -> LoadedLlama:
    return load_llama_cpp(*loading("llm", ServerSettings(llm="llama-cpp", llm_context_tokens=CONTEXT,
                                                         llm_contexts=1)))


def _turn(handler: LlamaCppLM, messages: tuple[ChatMessage, ...],
          truncation: Truncation = AUTO) -> tuple[str, TokenUsage | None, ResponseDone]:
    request = GenerateResponseRequest("r", 0, messages, max_output_tokens=ANSWER, truncation=truncation)
    items = list(handler.process(request))
    usage = next((item for item in items if isinstance(item, TokenUsage)), None)
    done = next(item for item in items if isinstance(item, ResponseDone))
    return "".join(item.text for item in items if isinstance(item, AssistantTextPart)), usage, done


def test_a_conversation_longer_than_the_context_is_cut_in_blocks_and_each_pause_reads_its_new_words(
        small_context: LoadedLlama, make_handler: Any) -> None:
    handler = make_handler(LlamaCppLM, small_context)
    messages: tuple[ChatMessage, ...] = ()
    inputs, reads = [], []
    for turn in range(36):
        said = "Hi, my name is Oliver and I live in Lisbon." if turn == 0 else f"Tell me a fact about number {turn}."
        messages = (*messages, ChatMessage("user", said))
        prompt = prompt_for(small_context.template, GenerateResponseRequest("r", 0, messages), handler.settings,
                            small_context.context)
        assert "Oliver" in prompt  # the opening is pinned through every cut
        answer, usage, done = _turn(handler, messages)
        assert done.status in ("completed", "incomplete") and usage is not None
        inputs.append(usage.input_tokens)
        reads.append(usage.input_tokens - usage.cached_tokens)
        messages = (*messages, ChatMessage("assistant", answer))
    assert max(inputs) <= CONTEXT - ANSWER
    cuts = [turn for turn in range(1, len(inputs)) if inputs[turn] < inputs[turn - 1]]
    assert len(cuts) >= 2, inputs
    # A turn reads its own words and the last answer's end marker, never the conversation again: at a cut
    # too, where the dropped block leaves the cache instead of what follows it being read anew.
    assert max(reads[1:]) < 40, list(zip(inputs, reads, strict=True))
    assert all(reads[turn] < 40 for turn in cuts)


def test_a_disabled_truncation_fails_a_conversation_that_does_not_fit(small_context: LoadedLlama,
                                                                      make_handler: Any) -> None:
    handler = make_handler(LlamaCppLM, small_context)
    long = tuple(ChatMessage("user" if i % 2 == 0 else "assistant", f"Sentence number {i} of many, said aloud.")
                 for i in range(61))
    _, _, done = _turn(handler, long, Truncation(None))
    assert done.status == "failed" and done.error and "truncation is disabled" in done.error
    _, usage, done = _turn(handler, long)  # the same conversation under auto is cut and answered
    assert done.status != "failed" and usage is not None and usage.input_tokens <= CONTEXT - ANSWER


def test_barge_ins_take_backs_and_tool_calls_between_turns_cost_no_full_read(small_context: LoadedLlama,
                                                                           make_handler: Any) -> None:
    """The history a barge-in cuts (the answer as far as heard), a reply taken back (the user's words run on
    into one turn) and a tool's call and result: the next pause reads around the change, not the conversation."""
    handler = make_handler(LlamaCppLM, small_context)
    messages: tuple[ChatMessage, ...] = (ChatMessage("user", "Hi, my name is Oliver and I live in Lisbon."),)
    answer, usage, _ = _turn(handler, messages)
    messages = (*messages, ChatMessage("assistant", answer))
    reads: dict[str, int] = {}
    call = {"call_id": "c1", "name": "get_weather", "arguments": '{"city": "Lisbon"}'}
    edits = {
        "barge-in": lambda m, a: (*m, ChatMessage("assistant", a.split(" ")[0])),
        "take-back": lambda m, a: (*m[:-1], ChatMessage("user", m[-1].content + " And in Porto?")),
        "tool call": lambda m, a: (*m, ChatMessage("assistant", "", (call,)),
                                   ChatMessage("tool", '{"sky": "sunny"}', tool_call_id="c1"),
                                   ChatMessage("assistant", a)),
    }
    for name, edit in edits.items():
        messages = (*messages, ChatMessage("user", f"What is the weather like today? ({name})"))
        answer, usage, _ = _turn(handler, messages)
        messages = edit(messages, answer)
        answer, usage, _ = _turn(handler, (*messages, ChatMessage("user", "Thanks, and tomorrow?")))
        assert usage is not None
        reads[name] = usage.input_tokens - usage.cached_tokens
        messages = (*messages, ChatMessage("user", "Thanks, and tomorrow?"), ChatMessage("assistant", answer))
    total = usage.input_tokens if usage else 0
    assert all(read < 60 for read in reads.values()), (reads, total)
    assert total > 150  # the conversation is long enough that a full read would show
