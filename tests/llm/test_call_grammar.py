"""A call held to its tools' schemas: the schema of one call, where a call starts, the template's call example."""

from __future__ import annotations

import jsonschema
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.llm.call_grammar import (
    call_grammars,
    call_markup_tokens,
    call_schema,
    call_start_tokens,
    call_starts,
    first_token_decides,
    no_call,
)
from speech_to_speech.llm.local_tokenizer import ChatTemplate, repaired_template
from speech_to_speech.llm.tools import FunctionTool, untitled

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


PIECES = [b"The", b'{"', b" {", b"```", b"<tool_call>", b"Sure", b"}", b" hello", b'({"']
STARTS = call_start_tokens(PIECES)


def test_the_tokens_that_start_a_call_are_braces_fences_and_the_tag() -> None:
    assert STARTS.tolist() == [1, 2, 3, 4]


def _scores(**probabilities: float) -> np.ndarray:
    """Logits over PIECES whose softmax is ``probabilities`` by piece index (the rest share what is left)."""
    chosen = {int(k[1:]): v for k, v in probabilities.items()}
    rest = (1.0 - sum(chosen.values())) / (len(PIECES) - len(chosen))
    return np.log(np.array([chosen.get(i, rest) for i in range(len(PIECES))], dtype=np.float32))


def test_a_likeliest_call_below_the_threshold_is_ruled_out_and_the_words_go_on() -> None:
    decide = first_token_decides(STARTS, 0.5)
    scores = decide([], _scores(t1=0.33, t0=0.2, t5=0.2))  # '{"' the likeliest token, but a call only 0.33+
    assert int(np.argmax(scores)) in (0, 5) and np.all(np.isneginf(scores[STARTS]))
    later = _scores(t1=0.9)
    assert np.array_equal(decide([], later.copy()), later)  # only the first token is decided


def test_an_unlikeliest_call_above_the_threshold_is_started() -> None:
    decide = first_token_decides(STARTS, 0.1)
    scores = decide([], _scores(t0=0.7, t3=0.08, t4=0.07))  # "The" likeliest; a call 0.15 + the rest's share
    assert int(np.argmax(scores)) == 3 and np.all(np.isneginf(np.delete(scores, STARTS)))


@given(st.lists(st.floats(-20, 20), min_size=len(PIECES), max_size=len(PIECES)), st.floats(0.0, 1.0))
def test_the_first_token_is_a_call_exactly_when_a_call_gets_the_threshold(logits: list[float],
                                                                         threshold: float) -> None:
    scores = np.array(logits, dtype=np.float32)
    probabilities = np.exp(scores.astype(np.float64) - scores.max())
    calling = probabilities[STARTS].sum() / probabilities.sum() >= threshold
    decided = first_token_decides(STARTS, threshold)([], scores.copy())
    assert (int(np.argmax(decided)) in STARTS.tolist()) == calling


@given(st.lists(st.lists(st.floats(-20, 20), min_size=len(PIECES), max_size=len(PIECES)), min_size=1, max_size=5))
def test_an_answer_with_calls_ruled_out_never_draws_a_call_s_markup(steps: list[list[float]]) -> None:
    markup = call_markup_tokens(PIECES)
    assert markup.tolist() == [1, 2, 3, 4, 6, 8]  # a brace or fence anywhere in the piece, not only first
    words_only = no_call(markup)
    for logits in steps:
        scores = words_only([], np.array(logits, dtype=np.float32))
        assert int(np.argmax(scores)) in (0, 5, 7)
        assert np.array_equal(np.delete(scores, markup), np.delete(np.array(logits, dtype=np.float32), markup))


def test_the_prompt_s_schemas_lose_their_title_keywords_but_not_a_property_named_title() -> None:
    schema = {"title": "meetingArguments", "type": "object",
              "properties": {"title": {"title": "Title", "type": "string"},
                             "when": {"title": "When", "type": "string"}}}
    assert untitled(schema) == {"type": "object",
                                "properties": {"title": {"type": "string"}, "when": {"type": "string"}}}
