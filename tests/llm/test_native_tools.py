"""Tools in a chat template's own format (Qwen2.5's): the prompt shows them, and JSON calls are parsed back."""

from __future__ import annotations

import json

from speech_to_speech.config import LLMSettings
from speech_to_speech.llm.chat_prompt import ANSWER_THE_RESULT, chat_turns, knows_tools, prompt_for
from speech_to_speech.llm.local_tokenizer import ChatTemplate
from speech_to_speech.llm.tools import ParsedCall, ToolCallSplitter, tools_of
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest

WEATHER = {"type": "function", "name": "get_weather", "description": "Weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ROOM = {"type": "function", "name": "get_room_temperature", "description": "Room temperature.",
        "parameters": {"type": "object", "properties": {}}}

# A small template in the style of Qwen2.5's: a tools block in the system turn, tool turns as responses.
TEMPLATE = """{% if tools %}<sys>{{ messages[0]['content'] }}
<tools>{% for tool in tools %}{{ tool | tojson }}{% endfor %}</tools>
Reply with <tool_call>{"name": ..., "arguments": ...}</tool_call></sys>
{% endif %}{% for m in messages %}{% if m.role == 'assistant' and m.tool_calls %}<assistant>{% for c in m.tool_calls %}\
<tool_call>{{ c.name }} {{ c.arguments | tojson }}</tool_call>{% endfor %}</assistant>
{% elif m.role == 'tool' %}<tool_response>{{ m.content }}</tool_response>
{% elif not (tools and m.role == 'system') %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>
{% endif %}{% endfor %}<assistant>"""


def request(*messages: ChatMessage, tools: tuple[dict, ...] = (WEATHER, ROOM)) -> GenerateResponseRequest:
    return GenerateResponseRequest("resp_1", 0, messages, tools=tools)


def test_a_template_that_knows_tools_gets_them_in_its_own_format_and_the_prompt_stays_plain() -> None:
    template = ChatTemplate(TEMPLATE)
    assert knows_tools(template)
    prompt = prompt_for(template, request(ChatMessage("user", "Weather in Paris?")), LLMSettings(
        init_chat_prompt="Be brief."))
    assert '<tools>{"type": "function", "function": {"name": "get_weather"' in prompt
    assert "def get_weather" not in prompt  # no Python stubs
    assert prompt.startswith("<sys>Be brief. Call a function only when the request needs it")
    assert prompt.endswith("<user>Weather in Paris?</user>\n<assistant>")


def test_without_tools_the_same_template_gets_a_plain_prompt() -> None:
    prompt = prompt_for(ChatTemplate(TEMPLATE), request(ChatMessage("user", "Hi"), tools=()),
                        LLMSettings(init_chat_prompt="Be brief."))
    assert prompt == "<system>Be brief.</system>\n<user>Hi</user>\n<assistant>"


def test_past_calls_and_their_results_are_native_turns_and_the_answer_is_asked_for() -> None:
    # The preamble said before the call is not shown to the model (it said it again in its answer).
    call = {"call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    turns = chat_turns(request(ChatMessage("user", "Weather in Paris?"),
                               ChatMessage("assistant", "One moment.", (call,)),
                               ChatMessage("tool", '{"sky": "sunny"}', tool_call_id="call_1")),
                       LLMSettings(), native=True)
    assert turns[1:] == [{"role": "user", "content": "Weather in Paris?"},
                         {"role": "assistant", "content": "", "tool_calls": [
                             {"name": "get_weather", "arguments": {"city": "Paris"}}]},
                         {"role": "tool", "content": '{"sky": "sunny"}'},
                         {"role": "user", "content": ANSWER_THE_RESULT}]


def split(chunks: list[str], tools: tuple[dict, ...] = (WEATHER, ROOM)) -> list[str | ParsedCall]:
    splitter = ToolCallSplitter(tools_of(request(tools=tools)))
    parts: list[str | ParsedCall] = []
    for chunk in chunks:
        parts.extend(splitter.feed(chunk))
    return [*parts, *splitter.finish()]


def calls(parts: list[str | ParsedCall]) -> list[tuple[str, dict]]:
    return [(p.name, json.loads(p.arguments)) for p in parts if isinstance(p, ParsedCall)]


def test_a_tagged_json_call_is_parsed_even_across_lines() -> None:
    parts = split(['<tool_call>\n{"name": "get_weather",', ' "arguments": {"city": "Paris"}}\n</tool_call>'])
    assert calls(parts) == [("get_weather", {"city": "Paris"})]
    assert not [p for p in parts if isinstance(p, str) and p.strip()]


def test_a_bare_json_call_streamed_token_by_token_is_a_call_and_never_text() -> None:
    reply = '{"name": "get_weather", "arguments": {"city": "London"}}'
    parts = split([reply[i : i + 4] for i in range(0, len(reply), 4)])
    assert calls(parts) == [("get_weather", {"city": "London"})]
    assert [p for p in parts if isinstance(p, str)] == []


def test_json_that_is_not_a_known_call_is_text_and_so_is_a_plain_reply() -> None:
    assert split(['{"name": "launch", "arguments": {}}']) == ['{"name": "launch", "arguments": {}}']
    assert "".join(str(p) for p in split(["The capital ", "is Madrid."])) == "The capital is Madrid."


def test_a_tool_without_parameters_is_called_whatever_the_model_put_in_its_arguments() -> None:
    echoed = '{"name": "get_room_temperature", "arguments": {"type": "object", "properties": {}}}'
    assert calls(split([echoed])) == [("get_room_temperature", {})]


def test_arguments_encoded_twice_are_read() -> None:
    twice = '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}</tool_call>'
    assert calls(split([twice])) == [("get_weather", {"city": "Rome"})]


def test_the_answer_to_a_tool_result_is_asked_without_the_tools_and_the_result_is_user_text() -> None:
    call = {"call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    prompt = prompt_for(ChatTemplate(TEMPLATE), request(
        ChatMessage("user", "Weather in Paris?"), ChatMessage("assistant", "", (call,)),
        ChatMessage("tool", '{"sky": "sunny"}', tool_call_id="call_1")), LLMSettings(init_chat_prompt="Be brief."))
    assert "<tools>" not in prompt and "<tool_call>" not in prompt
    assert prompt.endswith('<user>Weather in Paris?\nTool result (get_weather): {"sky": "sunny"}</user>\n<assistant>')


def test_where_the_backend_rules_calls_out_the_answer_keeps_the_tools_and_reads_on_from_the_call_s_prompt() -> None:
    template, settings = ChatTemplate(TEMPLATE), LLMSettings(init_chat_prompt="Be brief.")
    question = ChatMessage("user", "Weather in Paris?")
    call = {"call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    asked = prompt_for(template, request(question), settings, calls_ruled_out=True)
    answer = prompt_for(template, request(question, ChatMessage("assistant", "", (call,)),
                                          ChatMessage("tool", '{"sky": "sunny"}', tool_call_id="call_1")),
                        settings, calls_ruled_out=True)
    assert answer.startswith(asked)
    assert answer.endswith(
        f'<tool_response>{{"sky": "sunny"}}</tool_response>\n<user>{ANSWER_THE_RESULT}</user>\n<assistant>')
