"""Scoring of ``bench tools``: was the right tool called with the right arguments? Pure functions.

A request expects one call or none. A call made is right when its name is
the expected one and its arguments match after normalising: strings by case
and spacing, times ``H:MM`` as ``HH:MM``, URLs without their scheme,
``www.`` or trailing slash, numbers by value, lists of names in any order,
objects key by key. An argument the request does not expect is allowed only
when it is empty or the schema's default (``max_length=5000`` of a fetch):
anything else is a different call. Precision counts the calls made (a call
where none was needed is a false one), recall the calls needed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from speech_to_speech.bench.quality_score import Call

_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::00)?$")


def _text(value: str) -> str:
    text = " ".join(value.strip().casefold().split())
    match = _TIME.match(text)
    if match:
        return f"{int(match.group(1)):02d}:{match.group(2)}"
    url = re.sub(r"^https?://", "", text)
    if url != text or re.match(r"^[\w-]+(\.[\w-]+)+(/\S*)?$", text):
        return re.sub(r"^www\.", "", url).rstrip("/")
    return text.rstrip(".")


def same_value(got: Any, want: Any) -> bool:
    """``got`` is ``want`` up to the normalisation above, recursively."""
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if isinstance(want, int | float):
        try:
            return isinstance(got, int | float | str) and float(got) == float(want)
        except ValueError:  # a string that is no number
            return False
    if isinstance(want, str):
        return isinstance(got, str) and _text(got) == _text(want)
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return False
        if all(isinstance(v, str) for v in want) and all(isinstance(v, str) for v in got):
            return sorted(map(_text, got)) == sorted(map(_text, want))
        return all(same_value(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict):
        return isinstance(got, dict) and arguments_match(got, want, {})
    return bool(got == want)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def arguments_match(got: dict[str, Any], want: dict[str, Any], defaults: dict[str, Any]) -> bool:
    """Every expected argument given and equal; any other one empty or its schema default."""
    for key, value in want.items():
        if key not in got or not same_value(got[key], value):
            return False
    return all(_empty(value) or (key in defaults and same_value(value, defaults[key]))
               for key, value in got.items() if key not in want)


def schema_defaults(parameters: dict[str, Any] | None) -> dict[str, Any]:
    """The top-level defaults a tool's JSON Schema declares."""
    properties = (parameters or {}).get("properties") or {}
    return {name: spec["default"] for name, spec in properties.items() if isinstance(spec, dict) and "default" in spec}


def call_right(got: Call, want: Call, defaults: dict[str, Any]) -> bool:
    return got.name == want.name and arguments_match(got.arguments, want.arguments, defaults)


@dataclass(frozen=True)
class ToolVerdict:
    """One request's calls against the one it expected (or none)."""

    calls_made: int
    calls_expected: int  # 0 or 1
    right_tool: bool  # a call of the expected tool was made (or none, where none was expected)
    right_call: bool  # …and with the right arguments
    tool_calls_right: int  # calls made of the expected tool (at most 1 counts)
    calls_right: int  # calls made that are the expected call (at most 1 counts)

    @property
    def correct(self) -> bool:
        """Exactly what was needed: the expected call alone, or no call."""
        return self.right_call and self.calls_made == self.calls_expected


def judge(calls: Iterable[Call], expected: Call | None, defaults: dict[str, Any]) -> ToolVerdict:
    made = list(calls)
    if expected is None:
        return ToolVerdict(len(made), 0, not made, not made, 0, 0)
    same_tool = any(call.name == expected.name for call in made)
    right = any(call_right(call, expected, defaults) for call in made)
    return ToolVerdict(len(made), 1, same_tool, right, int(same_tool), int(right))


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def summarise(verdicts: Iterable[ToolVerdict]) -> dict[str, Any]:
    """Precision and recall of the calls (right arguments, and right tool alone), and the requests right."""
    seen = list(verdicts)
    made = sum(v.calls_made for v in seen)
    expected = sum(v.calls_expected for v in seen)
    right = sum(v.calls_right for v in seen)
    right_tool = sum(v.tool_calls_right for v in seen)
    no_tool = [v for v in seen if v.calls_expected == 0]
    return {
        "requests": len(seen),
        "correct": sum(v.correct for v in seen),
        "accuracy": _ratio(sum(v.correct for v in seen), len(seen)),
        "calls_made": made,
        "calls_expected": expected,
        "calls_right": right,
        "precision": _ratio(right, made),
        "recall": _ratio(right, expected),
        "tool_precision": _ratio(right_tool, made),
        "tool_recall": _ratio(right_tool, expected),
        "calls_where_none_needed": sum(v.calls_made for v in no_tool),
    }


def calls_in_output(output: Iterable[dict[str, Any]]) -> list[Call]:
    """The calls a response made: its ``function_call`` items and the ``mcp_call`` items the server ran."""
    return [Call.parse(str(item.get("name") or ""), item.get("arguments") or "{}") for item in output
            if item.get("type") in ("function_call", "mcp_call")]


def longest_silence_ms(end_of_speech: float, deltas: Iterable[tuple[float, float]]) -> float | None:
    """The longest silence a listener hears after their speech ends: each audio delta (arrival time, seconds of
    audio) plays on arrival or when the one before has played out. None: no audio at all."""
    play_end, longest, heard = end_of_speech, 0.0, False
    for arrival, seconds in sorted(deltas):
        longest = max(longest, arrival - play_end)
        play_end = max(play_end, arrival) + seconds
        heard = True
    return round(longest * 1000.0, 1) if heard else None
