"""bench conversation's words, rules and summary: the packaged conversations, the loader's checks, the scoring,
the figures over hand-made turns, and the prompt tokens read off a response.done."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.bench.conversation_script import KINDS, Rule, load_script
from speech_to_speech.bench.conversation_summary import summarize_conversations
from speech_to_speech.bench.events import prompt_tokens
from speech_to_speech.bench.turns import LATENCY


def test_the_packaged_conversations_are_long_and_recall_the_first_turns_at_the_end() -> None:
    script = load_script()
    assert len(script.conversations) >= 2
    for conversation in script.conversations:
        turns = conversation.turns
        assert len(turns) >= 30
        assert turns[0].kind == "fact" and turns[2].kind == "fact"  # who they are, then a preference
        recalls = [t for t in turns if t.kind == "recall"]
        assert {t.of_turn for t in recalls} >= {1, 3}
        assert all(t.number >= 28 for t in recalls)  # far from what they recall
        assert {t.kind for t in turns} == set(KINDS)
        assert sum(t.rule.checkable for t in turns) >= 20
        assert all(len(t.text.split()) <= 12 for t in turns)  # spoken, short sentences


def test_a_rule_wants_one_of_any_and_every_one_of_all() -> None:
    rule = Rule(any_of=("Tokyo", 8848), all_of=("Japan",))
    assert rule.right("Tokyo is the capital of Japan.") is True
    assert rule.right("It is 8,848 metres tall, in japan.") is True
    assert rule.right("Eight thousand eight hundred forty-eight metres, in Japan.") is True
    assert rule.right("Tokyo.") is False  # Japan missing
    assert rule.right("Kyoto is in Japan.") is False
    assert Rule().right("anything") is None and not Rule().checkable
    assert Rule(any_of=(0,)).right("Water freezes at zero degrees.") is True


@pytest.mark.parametrize(("turn", "problem"), [
    ({"kind": "chat", "text": "Hi."}, "kind 'chat' is not one of"),
    ({"kind": "recall", "text": "My name?"}, "a recall turn needs a rule"),
    ({"kind": "follow_up", "text": "And then?", "any": ["x"], "of_turn": 2}, "of_turn 2 is not an earlier turn"),
    ({"kind": "everyday", "text": "Half of five?", "any": [2.5]}, "a rule is a list of words and whole numbers"),
    ({"kind": "everyday", "text": " "}, "no text"),
])
def test_the_loader_names_what_is_wrong_with_a_turn(tmp_path: Path, turn: dict[str, Any], problem: str) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps({"voiced_s": [0.3, 5.0], "conversations": [
        {"name": "a", "turns": [{"kind": "fact", "text": "I am Sam."}, turn]}]}))
    with pytest.raises(ValueError, match="a turn 2: " + problem):
        load_script(path)


def test_the_loader_refuses_a_name_used_twice(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    one = {"name": "a", "turns": [{"kind": "fact", "text": "I am Sam."}]}
    path.write_text(json.dumps({"voiced_s": [0.3, 5.0], "conversations": [one, one]}))
    with pytest.raises(ValueError, match="a: the name is used twice"):
        load_script(path)


def turn(conversation: str, number: int, latency: float | None, right: bool | None = None, kind: str = "everyday",
         tokens: int | None = None) -> dict[str, Any]:
    sample: dict[str, Any] = {"conversation": conversation, "turn": number, "kind": kind, "right": right,
                              "answered": latency is not None, "double": False, "taken_back": 0}
    if latency is not None:
        sample[LATENCY] = latency
    if tokens is not None:
        sample["prompt_tokens_read"] = tokens
    return sample


def test_the_summary_pools_turns_2_to_6_and_each_conversations_last_five() -> None:
    # Conversation a: 8 turns at 100..800 ms; b: 7 turns at 200 ms, its last one unanswered (a recall, so wrong).
    a = [turn("a", n, 100.0 * n, right=n % 2 == 0 if n > 1 else None, tokens=10 * n) for n in range(1, 9)]
    b = [turn("b", n, 200.0, tokens=5) for n in range(1, 7)] + [turn("b", 7, None, right=False, kind="recall")]
    a[7] = turn("a", 8, 800.0, right=True, kind="recall", tokens=80)
    summary = summarize_conversations(a + b)
    # Turns 2-6: a's 200..600 and b's five 200s -> median of ten values.
    assert summary["turns_2_to_6_ms"]["n"] == 10 and summary["turns_2_to_6_ms"]["p50"] == 200.0
    # Last five: a's 400..800 and b's 200 x4 (turn 7 unanswered has no latency).
    assert summary["last_five_turns_ms"]["n"] == 9 and summary["last_five_turns_ms"]["p50"] == 400.0
    assert summary["last_five_to_turns_2_to_6"] == 2.0
    assert summary["recall"] == {"right": 1, "n": 2, "rate": 0.5}
    # Scored: a's turns 2..8 (2, 4, 6, 8 right; 3, 5, 7 wrong) and b's 7 (wrong).
    assert summary["scored"] == {"right": 4, "n": 8, "rate": 0.5}
    assert (summary["turns"], summary["answered"], summary["unanswered"]) == (15, 14, ["b turn 7"])
    assert summary["per_conversation"]["a"]["last_five_to_turns_2_to_6"] == round(600.0 / 400.0, 3)
    assert summary["per_conversation"]["b"]["recall_rate"] == 0.0
    assert summary["prompt_tokens_read"]["n"] == 14 and summary["per_conversation"]["b"]["prompt_tokens_read_p50"] == 5


def done(usage: Any) -> dict[str, Any]:
    return {"type": "response.done", "response": {"id": "r", "status": "completed", "usage": usage}}


def test_prompt_tokens_read_are_the_input_less_the_cached() -> None:
    cached = {"input_tokens": 900, "input_token_details": {"cached_tokens": 870, "text_tokens": 900}}
    assert prompt_tokens(done(cached)) == {"input_tokens": 900, "cached_tokens": 870, "prompt_tokens_read": 30}
    assert prompt_tokens(done({"input_tokens": 40})) == {"input_tokens": 40, "cached_tokens": 0,
                                                        "prompt_tokens_read": 40}
    odd = {"input_tokens": 40, "input_token_details": {"cached_tokens": None}}
    assert prompt_tokens(done(odd))["prompt_tokens_read"] == 40
    assert prompt_tokens(done(None)) == {} and prompt_tokens({"type": "response.done"}) == {}
