"""How a conversation becomes chat turns for the local LLMs (no model needed)."""

from __future__ import annotations

from typing import Any

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.chat_prompt import chat_turns, render_prompt
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest


def request(*messages: ChatMessage, instructions: str | None = None) -> GenerateResponseRequest:
    return GenerateResponseRequest("resp_1", 0, messages, instructions=instructions)


def test_system_prompt_comes_from_instructions_else_the_settings() -> None:
    settings = ServerSettings(init_chat_prompt="Be brief.").llm
    hello = ChatMessage("user", "Hi")
    assert chat_turns(request(hello), settings)[0] == {"role": "system", "content": "Be brief."}
    assert chat_turns(request(hello, instructions="Be a pirate."), settings)[0]["content"] == "Be a pirate."


def test_tool_results_become_user_text_named_after_their_call() -> None:
    call = {"call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    turns = chat_turns(
        request(
            ChatMessage("user", "Weather in Paris?"),
            ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", '{"sky": "sunny"}', tool_call_id="call_1"),
        ),
        ServerSettings().llm,
    )
    # The empty assistant turn is dropped, so the tool result merges into the user's turn.
    assert turns[1:] == [
        {"role": "user", "content": 'Weather in Paris?\nTool result (get_weather): {"sky": "sunny"}'}
    ]


def test_history_keeps_at_most_chat_size_exchanges_the_opening_and_the_newest() -> None:
    messages = [ChatMessage("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(10)]
    turns = chat_turns(request(*messages), ServerSettings(chat_size=2).llm)
    assert [t["content"] for t in turns[1:]] == ["m0", "m1", "m8", "m9"]


class StrictTemplate:
    """A tokenizer whose template, like some real ones, rejects the system role."""

    chat_template = "strict"

    def apply_chat_template(self, turns: list[dict[str, str]], **kwargs: Any) -> str:
        if any(t["role"] == "system" for t in turns):
            raise ValueError("System role not supported")
        return "|".join(f"{t['role']}:{t['content']}" for t in turns) + "|assistant:"


def test_system_prompt_folds_into_the_first_user_turn_when_rejected() -> None:
    turns = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert render_prompt(StrictTemplate(), turns) == "user:Be brief.\n\nHi|assistant:"


def test_without_a_template_the_prompt_is_a_plain_transcript() -> None:
    class Bare:
        chat_template = None

    prompt = render_prompt(Bare(), [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])
    assert prompt == "System: S\nUser: Hi\nAssistant:"
