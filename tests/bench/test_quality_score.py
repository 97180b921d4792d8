"""The scoring of `bench quality`: right answers are found in what models really say, wrong ones are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from speech_to_speech.bench.quality import load_set, set_path
from speech_to_speech.bench.quality_score import (
    Call,
    call_matches,
    contains,
    list_of_three,
    one_sentence,
    score,
    summarize_quality,
    yes_no,
)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("The capital of France is Paris.", "Paris"), ("paris!", "Paris"), ("Seven plus five is 12.", 12),
     ("Seven plus five is twelve.", 12), ("That makes one hundred twenty minutes.", 120),
     ("There are a thousand grams in a kilogram.", 1000), ("It is 5,000 metres.", 5000),
     ("It's forty-two.", 42), ("Neil Armstrong was first.", "Armstrong")],
)
def test_an_answer_is_found_in_digits_or_words(reply: str, expected: str | int) -> None:
    assert contains(reply, expected)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("The capital is Lyon.", "Paris"), ("It is 120 minutes.", 12), ("One hundred and twenty", 12),
     ("Parisian food is good.", "Paris"), ("Seventy", 7), ("It is 1200.", 120)],
)
def test_a_wrong_answer_or_a_longer_word_is_not_taken_for_the_right_one(reply: str, expected: str | int) -> None:
    assert not contains(reply, expected)


def test_answer_shapes() -> None:
    assert one_sentence("The sun is a star at the centre of our solar system.")
    assert not one_sentence("The sun is a star. It is very hot.")
    assert yes_no("Yes, ice is cold.", "yes") and not yes_no("No.", "yes") and not yes_no("Ice is cold.")
    assert list_of_three("Red, green and blue.")
    assert list_of_three("Here are three fruits: apples, bananas, and cherries.")
    assert list_of_three("1. France\n2. Spain\n3. Italy")
    assert not list_of_three("Red and blue.")
    assert not list_of_three("Red, green, blue and yellow.")


def test_a_call_matches_on_name_and_arguments_up_to_case_and_number_type() -> None:
    want = Call("set_timer", {"minutes": 10})
    assert call_matches(Call.parse("set_timer", '{"minutes": 10}'), want)
    assert call_matches(Call.parse("set_timer", '{"minutes": "10"}'), want)
    assert not call_matches(Call.parse("set_timer", '{"minutes": 5}'), want)
    assert not call_matches(Call.parse("get_weather", '{"minutes": 10}'), want)
    assert not call_matches(Call.parse("set_timer", '{"minutes": 10, "label": "tea"}'), want)
    assert call_matches(Call.parse("get_weather", {"city": "paris"}), Call("get_weather", {"city": "Paris"}))
    assert not call_matches(Call.parse("get_weather", "not json"), Call("get_weather", {"city": "Paris"}))


def test_a_tool_request_is_right_with_the_one_right_call_and_a_plain_request_with_no_call() -> None:
    tool = {"category": "tool", "call": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    right = Call("get_weather", {"city": "Paris"})
    assert score(tool, "", [right]).correct
    assert not score(tool, "", []).correct
    assert not score(tool, "", [right, Call("set_timer", {"minutes": 1})]).correct
    none = {"category": "tool", "call": None, "expect": ["Madrid"]}
    assert score(none, "Madrid.", []).correct
    assert not score(none, "Madrid.", [right]).correct
    fact = {"category": "fact", "expect": ["Paris"]}
    assert score(fact, "Paris", []).correct and not score(fact, "Paris", [right]).correct


def test_precision_and_recall_count_calls_over_every_request() -> None:
    samples = [
        {"category": "tool", "correct": True, "calls_made": 1, "calls_right": 1, "calls_expected": 1},
        {"category": "tool", "correct": False, "calls_made": 0, "calls_right": 0, "calls_expected": 1},
        {"category": "fact", "correct": False, "calls_made": 1, "calls_right": 0, "calls_expected": 0},
        {"category": "fact", "correct": True, "calls_made": 0, "calls_right": 0, "calls_expected": 0},
    ]
    summary = summarize_quality(samples)
    assert summary["accuracy"] == 0.5
    assert summary["by_category"]["tool"] == {"accuracy": 0.5, "right": 1, "n": 2}
    assert summary["tool_calls"]["precision"] == 0.5 and summary["tool_calls"]["recall"] == 0.5


def test_the_packaged_set_has_sixty_checkable_requests_in_every_category() -> None:
    requests = load_set()
    assert len(requests) >= 60
    categories = {r["category"] for r in requests}
    assert categories == {"fact", "arithmetic", "conversion", "instruction", "multiturn", "tool"}
    assert all(len(r["turns"]) >= 2 for r in requests if r["category"] == "multiturn")
    assert any(r.get("call") is None for r in requests if r["category"] == "tool")


def test_the_everyday_set_is_held_out_from_the_quality_set() -> None:
    everyday = load_set(set_path("everyday"))
    asked = {turn.lower() for request in load_set(set_path("quality")) for turn in request["turns"]}
    assert len(everyday) >= 15
    assert not [turn for request in everyday for turn in request["turns"] if turn.lower() in asked]
    assert all(request.get("expect") for request in everyday)  # every answer is checked against a fact
    assert set_path("mine.json") == Path("mine.json")
