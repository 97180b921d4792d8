"""A call held to its tools' schemas: the schema of one call, where a call starts, the template's call example."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.llm.call_grammar import call_grammars, call_schema, call_starts
from speech_to_speech.llm.local_tokenizer import ChatTemplate, repaired_template
from speech_to_speech.llm.tools import FunctionTool

# The shape of our MCP server's book_table: a nested object behind a local $ref, as pydantic writes it.
BOOK = FunctionTool("book_table", "Book a table.", {
    "type": "object",
    "$defs": {"Party": {"type": "object", "properties": {"size": {"type": "integer"},
                                                          "names": {"type": "array", "items": {"type": "string"}}},
                        "required": ["size"]}},
    "properties": {"restaurant": {"type": "string"}, "party": {"$ref": "#/$defs/Party"}, "time": {"type": "string"}},
    "required": ["restaurant", "party", "time"],
})
CLOCK = FunctionTool("get_current_time", "Time in a zone.", {
    "type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]})
ROOM = FunctionTool("get_room_temperature", "Room temperature.", {"type": "object"})
TOOLS = [BOOK, CLOCK, ROOM]


def test_the_schema_of_a_call_admits_each_tool_with_its_own_arguments_and_refs_resolved_in_place() -> None:
    schema = call_schema(TOOLS)
    assert "$ref" not in repr(schema) and "$defs" not in repr(schema)
    right = {"name": "book_table", "arguments": {"restaurant": "Sakura", "party": {"size": 2, "names": ["Anna"]},
                                                 "time": "20:00"}}
    jsonschema.validate(right, schema)
    jsonschema.validate({"name": "get_room_temperature", "arguments": {}}, schema)
    for wrong in ({"name": "book_table", "arguments": {"restaurant": "Sakura", "party": {"size": "two"},
                                                        "time": "20:00"}},
                  {"name": "reserve_table", "arguments": {"restaurant": "Sakura"}},
                  {"name": "get_current_time", "timezone": "Asia/Tokyo"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, schema)


def test_the_grammars_name_only_the_offered_tools_and_the_tagged_one_ends_with_the_closing_tag() -> None:
    grammars = call_grammars(TOOLS)
    assert grammars is not None
    for name in ("book_table", "get_current_time", "get_room_temperature"):
        assert f'"\\"{name}\\""' in grammars.tagged and f'"\\"{name}\\""' in grammars.bare
    assert grammars.tagged.startswith('root ::= "\\n"? call "\\n"? "</tool_call>"')
    assert grammars.bare.startswith("root ::= call\n")
    assert call_grammars([]) is None


@pytest.mark.parametrize(("said", "piece", "start"), [
    ("", "{\"", "bare"), (" ", "{", "bare"), ("Sure. ", "<tool_call>", "tagged"), ("Sure. <tool_", "call>", "tagged"),
    ("", "The", None), ("It costs {", "x", None), ("<tool_call>", "\n", None), ("Sure", "<tool_call>{", None),
])
def test_a_call_starts_at_its_tag_or_at_a_brace_that_opens_the_reply(said: str, piece: str, start: str | None) -> None:
    assert call_starts(said, piece) == start


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_a_reply_that_opens_with_words_never_starts_a_bare_call(words: str) -> None:
    if words.strip() and not words.lstrip().startswith("{"):
        assert call_starts(words, "{") is None


# The 1.5B Coder's GGUF template writes its call example with doubled braces, as a format string would.
DOUBLED = ('{%- if tools %}{{- "<tools>" }}{%- for tool in tools %}{{- tool | tojson }}{%- endfor %}'
           '{{- "</tools>\\n<tool_call>\\n{{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}}'
           '\\n</tool_call>" }}{%- endif %}{%- for m in messages %}{{- m.content }}{%- endfor %}')


def test_a_doubled_brace_call_example_is_rendered_as_the_json_it_stands_for() -> None:
    assert repaired_template(repaired_template(DOUBLED)) == repaired_template(DOUBLED)
    prompt = ChatTemplate(DOUBLED).apply_chat_template(
        [{"role": "user", "content": "hi"}], tools=[{"type": "function", "function": {"name": "f"}}])
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' in prompt
    assert "{{" not in prompt
