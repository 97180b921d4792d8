"""Tools for local models: schema -> signature -> prompt, and parsing calls out of streamed text."""

from __future__ import annotations

import inspect
import json

import pytest

from speech_to_speech.llm.tools import (
    CALL_CLOSE,
    CALL_OPEN,
    FunctionTool,
    ParsedCall,
    ToolCallError,
    ToolCallSplitter,
    local_system_prompt,
    parse_call,
    render_tool_prompt,
    signature_from_schema,
    split_tool_calls,
)
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, ChatMessage, GenerateResponseRequest

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
            "days": {"type": "integer"},
        },
        "required": ["city"],
    },
}
TOOLS = {"get_weather": FunctionTool.from_session(WEATHER)}


def request(tools: tuple[dict, ...] = (WEATHER,), tool_choice: str | dict = "auto") -> GenerateResponseRequest:
    return GenerateResponseRequest("resp_1", 0, (ChatMessage("user", "Weather in Paris?"),), tools=tools,
                                   tool_choice=tool_choice)


def test_schema_becomes_a_keyword_only_signature_with_required_first() -> None:
    signature = signature_from_schema(WEATHER["parameters"])
    params = list(signature.parameters.values())
    assert [p.name for p in params] == ["city", "unit", "days"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
    assert params[0].default is inspect.Parameter.empty
    assert params[1].default == "c" and params[1].annotation == "Literal['c', 'f']"
    assert params[2].default is None and params[2].annotation == "int"


def test_code_prompt_is_a_python_stub_with_the_descriptions() -> None:
    stub = TOOLS["get_weather"].to_code_prompt()
    assert stub.startswith("def get_weather(city: str, unit: Literal['c', 'f'] = 'c', days: int = None):")
    assert "Current weather for a city." in stub and "city: City name" in stub


def test_system_prompt_lists_the_tools_and_the_call_syntax() -> None:
    prompt = local_system_prompt(request(), "Be brief.")
    assert prompt.startswith("Be brief.")
    assert "def get_weather(" in prompt
    assert f"{CALL_OPEN}get_weather(city=..., unit=...){CALL_CLOSE}" in prompt
    assert "Only call a function when it helps" in prompt


def test_tool_choice_none_or_no_tools_leave_the_instructions_alone() -> None:
    assert local_system_prompt(request(tool_choice="none"), "Be brief.") == "Be brief."
    assert local_system_prompt(request(tools=()), "Be brief.") == "Be brief."
    forced = render_tool_prompt("Hi.", list(TOOLS.values()), {"type": "function", "name": "get_weather"})
    assert "You must call get_weather" in forced
    assert "You must call one of the functions" in render_tool_prompt("Hi.", list(TOOLS.values()), "required")


def test_calls_parse_with_keywords_positionals_and_json_literals() -> None:
    assert parse_call("get_weather(city='Paris', days=2)", TOOLS) == ("get_weather", {"city": "Paris", "days": 2})
    assert parse_call("get_weather('Paris')", TOOLS) == ("get_weather", {"city": "Paris"})
    assert parse_call("`get_weather(city=\"Oslo\", unit='f')`", TOOLS)[1] == {"city": "Oslo", "unit": "f"}
    flags = FunctionTool("toggle", "", {"type": "object", "properties": {"on": {"type": "boolean"}}})
    assert parse_call("toggle(on=true)", {"toggle": flags}) == ("toggle", {"on": True})


@pytest.mark.parametrize("text", [
    "get_time()",  # not registered
    "get_weather(days=2)",  # required argument missing
    "get_weather(city=open('/etc/passwd'))",  # not a literal: never evaluated
    "get_weather(city='Paris', colour='red')",  # unknown argument
    "print('hello'",  # not even Python
])
def test_invalid_calls_are_rejected(text: str) -> None:
    with pytest.raises(ToolCallError):
        parse_call(text, TOOLS)


def run_splitter(chunks: list[str]) -> list[str | ParsedCall]:
    splitter = ToolCallSplitter(list(TOOLS.values()))
    parts: list[str | ParsedCall] = []
    for chunk in chunks:
        parts.extend(splitter.feed(chunk))
    parts.extend(splitter.finish())
    return parts


def test_streamed_call_is_split_out_even_when_its_markers_are_cut_across_chunks() -> None:
    text = f"Let me check. {CALL_OPEN}get_weather(city='Paris'){CALL_CLOSE} One moment."
    chunks = [text[i : i + 3] for i in range(0, len(text), 3)]
    parts = run_splitter(chunks)
    spoken = "".join(p for p in parts if isinstance(p, str))
    calls = [p for p in parts if isinstance(p, ParsedCall)]
    assert spoken == "Let me check.  One moment."
    assert "<" not in spoken
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert calls[0].call_id.startswith("call_")


def test_text_that_only_looks_like_a_marker_is_released() -> None:
    assert "".join(str(p) for p in run_splitter(["a < b and <tool", "box> c"])) == "a < b and <toolbox> c"


def test_an_invalid_call_is_dropped_and_an_unterminated_one_is_still_tried() -> None:
    parts = run_splitter([f"Sure. {CALL_OPEN}launch_rockets(){CALL_CLOSE}"])
    assert parts == ["Sure. "]
    tail = run_splitter([f"Ok. {CALL_OPEN}get_weather(city='Rome')"])
    assert tail[0] == "Ok. " and isinstance(tail[1], ParsedCall) and tail[1].name == "get_weather"


def test_several_calls_in_one_block_each_become_a_call() -> None:
    block = f"{CALL_OPEN}get_weather(city='Paris')\nget_weather(city='Rome'){CALL_CLOSE}"
    calls = [p for p in run_splitter([block]) if isinstance(p, ParsedCall)]
    assert [json.loads(c.arguments)["city"] for c in calls] == ["Paris", "Rome"]
    assert len({c.call_id for c in calls}) == 2


def test_split_tool_calls_stamps_the_request_and_passes_text_through_without_tools() -> None:
    parts = list(split_tool_calls(request(), ["Checking. ", f"{CALL_OPEN}get_weather(city='Paris'){CALL_CLOSE}"]))
    assert parts[0] == "Checking. "
    call = parts[1]
    assert isinstance(call, AssistantToolCallPart)
    assert (call.response_id, call.generation, call.name) == ("resp_1", 0, "get_weather")
    plain = [f"{CALL_OPEN}get_weather(city='Paris'){CALL_CLOSE}"]
    assert list(split_tool_calls(request(tools=()), plain)) == plain
