"""Scoring of ``bench quality``: is a spoken answer right? Pure functions over the reply text and the calls.

An expected answer is a word or a number: the reply must contain it as a
whole word, a number either in digits ("120", "1,000") or in words ("one
hundred twenty", "a thousand"). Instruction checks look at the shape of
the reply (one sentence, a yes or a no first, a list of three). A tool
request is right when its calls are exactly the expected one (name, and
arguments equal up to case and number type), or none when none is expected.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from speech_to_speech.speech_text.numbers import cardinal

Expected = str | int


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]

    @classmethod
    def parse(cls, name: str, arguments: str | dict[str, Any]) -> Call:
        if isinstance(arguments, str):
            try:
                loaded = json.loads(arguments or "{}")
            except json.JSONDecodeError:
                loaded = {"_unparsed": arguments}
            arguments = loaded if isinstance(loaded, dict) else {"_value": loaded}
        return cls(name, arguments)


def _plain(text: str) -> str:
    """Lower case, hyphens as spaces, punctuation gone (digits keep their thousands commas dropped)."""
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text.lower())
    text = text.replace("-", " ")
    return " " + re.sub(r"[^a-z0-9. ]+", " ", text).replace(". ", " ") + " "


def _number_forms(number: int) -> list[str]:
    words = cardinal(number).replace("-", " ")
    forms = [str(number), words]
    if words.startswith("one "):  # "a hundred", "a thousand"
        forms.append("a " + words[4:])
    return forms


def contains(reply: str, expected: Expected) -> bool:
    """``reply`` says ``expected``: a whole word (any case), or a number in digits or words."""
    text = re.sub(r"\s+", " ", _plain(reply))
    forms = _number_forms(expected) if isinstance(expected, int) else [re.sub(r"\s+", " ", _plain(expected).strip())]
    return any(re.search(rf"(?<![a-z0-9]){re.escape(form)}(?![a-z0-9])", text) for form in forms)


def sentences(reply: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", reply.strip())
    return [p for p in parts if re.search(r"\w", p)]


def one_sentence(reply: str) -> bool:
    return len(sentences(reply)) == 1


def yes_no(reply: str, expected: str | None = None) -> bool:
    """The reply starts with yes or no (and it is the expected one, when given)."""
    first = re.match(r"\W*(yes|no)\b", reply.strip().lower())
    return first is not None and (expected is None or first.group(1) == expected.lower())


def list_items(reply: str) -> list[str]:
    """The items of a spoken or written list: "red, green and blue", "1. red 2. green …", one per line."""
    lines = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line) for line in reply.splitlines() if line.strip()]
    if len(lines) >= 3 and all(len(line.split()) <= 6 for line in lines[-3:]):
        return [line for line in lines if len(line.split()) <= 6]
    body = reply.strip().rstrip(".!")
    if ":" in body:
        body = body.split(":", 1)[1]
    body = re.split(r"(?<=[.!?])\s", body)[0]
    items = [i.strip() for i in re.split(r",|\band\b|\bor\b", body) if i.strip()]
    return items


def list_of_three(reply: str) -> bool:
    return len(list_items(reply)) == 3


def _same_value(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return got == want
    if isinstance(want, int | float):
        try:
            return float(got) == float(want)
        except (TypeError, ValueError):
            return isinstance(got, str) and contains(got, int(want))
    if isinstance(want, str):
        return isinstance(got, str) and got.strip().lower() == want.strip().lower()
    return bool(got == want)


def call_matches(got: Call, want: Call) -> bool:
    """Same name and, for every expected argument, an equal value; no unexpected required-looking extras."""
    if got.name != want.name:
        return False
    extra = set(got.arguments) - set(want.arguments)
    return all(_same_value(got.arguments.get(k), v) for k, v in want.arguments.items()) and not extra


@dataclass(frozen=True)
class Verdict:
    correct: bool
    calls_made: int
    calls_right: int  # calls that match the expected one (at most one counts)
    calls_expected: int


def score(request: dict[str, Any], reply: str, calls: Sequence[Call]) -> Verdict:
    """The verdict on one request of the set: its last reply and the calls made in it."""
    expected_call = request.get("call")
    want = Call(expected_call["name"], expected_call.get("arguments") or {}) if expected_call else None
    right = 1 if want is not None and any(call_matches(c, want) for c in calls) else 0
    counts = {"calls_made": len(calls), "calls_right": right, "calls_expected": 1 if want else 0}
    if "call" in request:
        # A tool request: the one right call, or (none expected) no call and a right answer.
        correct = (right == 1 and len(calls) == 1) if want else (not calls and _answer_ok(request, reply))
        return Verdict(correct, **counts)
    return Verdict(not calls and _answer_ok(request, reply), **counts)


def _answer_ok(request: dict[str, Any], reply: str) -> bool:
    check = request.get("check")
    expected: list[Expected] = request.get("expect") or []
    if check == "one_sentence":
        return one_sentence(reply)
    if check == "list_of_three":
        return list_of_three(reply)
    if check == "yes_no":
        return yes_no(reply, str(expected[0]) if expected else None)
    return not expected or any(contains(reply, e) for e in expected)


def follow_up_ok(request: dict[str, Any], follow_up: str) -> bool | None:
    """After a right call: does the spoken answer carry the tool's result? None when there is nothing to check."""
    expected: list[Expected] = request.get("expect") or []
    if not request.get("call") or not expected:
        return None
    return any(contains(follow_up, e) for e in expected)


def summarize_quality(samples: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy per category and overall, and tool-call precision and recall."""
    by_category: dict[str, list[bool]] = {}
    made = right = expected = 0
    spoke: list[bool] = []
    for sample in samples:
        by_category.setdefault(sample["category"], []).append(bool(sample["correct"]))
        made += sample["calls_made"]
        right += sample["calls_right"]
        expected += sample["calls_expected"]
        if sample.get("follow_up_ok") is not None:
            spoke.append(bool(sample["follow_up_ok"]))
    every = [ok for oks in by_category.values() for ok in oks]
    return {
        "accuracy": round(sum(every) / len(every), 3) if every else None,
        "requests": len(every),
        "by_category": {name: {"accuracy": round(sum(oks) / len(oks), 3), "right": sum(oks), "n": len(oks)}
                        for name, oks in sorted(by_category.items())},
        "tool_calls": {"made": made, "right": right, "expected": expected,
                       "precision": round(right / made, 3) if made else None,
                       "recall": round(right / expected, 3) if expected else None,
                       "result_spoken": f"{sum(spoke)} of {len(spoke)}" if spoke else None},
    }
