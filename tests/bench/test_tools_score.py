"""bench tools' scoring: right tool and right arguments, precision and recall."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.bench.quality_score import Call
from speech_to_speech.bench.tool_calls import expected_call, load_requests
from speech_to_speech.bench.tools_offered import FETCH_TOOL
from speech_to_speech.bench.tools_score import judge, same_value, schema_defaults, summarise

FETCH_DEFAULTS = schema_defaults(FETCH_TOOL["parameters"])
MEETING = Call("schedule_meeting", {"title": "team sync", "when": {"day": "tomorrow", "start": "14:00",
                                                                   "end": "14:30"}, "attendees": ["Carol", "Dan"]})


def test_arguments_match_up_to_case_spacing_time_padding_url_form_and_name_order() -> None:
    assert same_value("  Team  Sync ", "team sync")
    assert same_value("9:00", "09:00") and not same_value("9:30", "09:00")
    assert same_value("http://www.example.com/", "https://example.com")
    assert not same_value("https://example.org", "https://example.com")
    assert same_value("4", 4) and same_value(4.0, 4) and not same_value("four", 4)
    assert not same_value(1, True) and not same_value("Europe/London", "London")
    got = {"title": "Team sync", "when": {"day": "Tomorrow", "start": "14:00", "end": "14:30"},
           "attendees": ["Dan", "carol"]}
    assert judge([Call("schedule_meeting", got)], MEETING, {}).right_call


def test_an_extra_argument_is_right_only_when_empty_or_the_schema_default() -> None:
    want = Call("fetch", {"url": "https://python.org"})
    assert FETCH_DEFAULTS == {"max_length": 5000, "start_index": 0, "raw": False}
    stock = {"url": "python.org", "max_length": 5000, "start_index": 0, "raw": False}
    assert judge([Call("fetch", stock)], want, FETCH_DEFAULTS).correct
    assert not judge([Call("fetch", {**stock, "raw": True})], want, FETCH_DEFAULTS).right_call
    nested = {**MEETING.arguments, "when": {**MEETING.arguments["when"], "timezone": "UTC"}}
    verdict = judge([Call("schedule_meeting", nested)], MEETING, {})
    assert verdict.right_tool and not verdict.right_call


def test_precision_counts_the_calls_made_and_recall_the_calls_needed() -> None:
    time = Call("get_current_time", {"timezone": "Asia/Tokyo"})
    verdicts = [
        judge([time], time, {}),  # right
        judge([Call("get_current_time", {"timezone": "Tokyo"})], time, {}),  # right tool, wrong argument
        judge([], time, {}),  # missed
        judge([time], None, {}),  # a call where none was needed
        judge([], None, {}),  # rightly none
    ]
    summary = summarise(verdicts)
    assert summary["calls_made"] == 3 and summary["calls_expected"] == 3 and summary["calls_right"] == 1
    assert summary["precision"] == round(1 / 3, 3) and summary["recall"] == round(1 / 3, 3)
    assert summary["tool_precision"] == round(2 / 3, 3) and summary["tool_recall"] == round(2 / 3, 3)
    assert summary["correct"] == 2 and summary["calls_where_none_needed"] == 1
    assert summarise([judge([], None, {})])["precision"] is None  # no call made: precision is undefined


def test_two_calls_where_one_was_needed_are_not_correct_though_one_is_right() -> None:
    time = Call("get_current_time", {"timezone": "Asia/Tokyo"})
    verdict = judge([time, time], time, {})
    assert verdict.right_call and not verdict.correct and verdict.calls_right == 1


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)


@given(JSON)
def test_every_value_matches_itself(value: Any) -> None:
    assert same_value(value, value)


def test_the_packaged_set_has_held_out_requests_of_every_tool_and_some_that_need_none() -> None:
    requests = load_requests()
    held_out = [r for r in requests if r["split"] == "held_out"]
    tools = {call.name for r in held_out if (call := expected_call(r)) is not None}
    assert tools == {"get_current_time", "convert_time", "fetch", "book_table", "schedule_meeting"}
    assert any(expected_call(r) is None for r in held_out)
    assert {r["split"] for r in requests} == {"tune", "held_out"}
