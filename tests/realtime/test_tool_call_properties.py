"""Invariants of a response's tool calls over random interleavings (hypothesis), beside the turn properties.

``ToolTurn`` (realtime/tools/call_state.py) is driven with any order of what
can happen around server-run calls: calls start while the model's request
runs, return, fail or time out (twice, or after the turn moved on), the
request ends in any status, the user speaks over the turn, the client
cancels it. After every step: the response ends at most once and nothing is
asked of the model after; a follow-up is asked only when the request ended
and no call runs; an ended turn leaves no call running (a call the user
spoke over goes on detached, and only then); an outcome is taken once; the
follow-ups are bounded. And at the end, delivering what is still owed (the
open request ends, the calls come back) always ends the turn: it never waits
for nothing.
"""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.realtime.tools import call_state as cs

CI_EXAMPLES = int(os.environ.get("S2S_PROPERTY_EXAMPLES", "400"))
CALL_IDS = [f"call_{i}" for i in range(5)]

EVENTS = st.one_of(
    st.builds(cs.CallStarted, st.sampled_from(CALL_IDS)),
    st.builds(cs.CallAwaitsApproval, st.sampled_from(CALL_IDS)),
    st.builds(cs.CallReturned, st.sampled_from(CALL_IDS), st.booleans()),
    st.builds(cs.CallTimedOut, st.sampled_from(CALL_IDS)),
    st.builds(cs.RequestEnded, st.sampled_from(["completed", "completed", "cancelled", "incomplete", "failed"])),
    st.builds(cs.TurnEnded, st.sampled_from(["turn_detected", "client_cancelled", "completed", "failed"])),
)


class Observer:
    """Feeds events to a ToolTurn as the session would, and checks every promise after each step."""

    def __init__(self, approved_start: bool) -> None:
        self.turn = cs.ToolTurn(request_open=not approved_start)
        self.finished = 0
        self.ended_outside = False
        self.detach_allowed = False
        self.reported: set[str] = set()
        self.kept: set[str] = set()
        self.follow_ups = 0

    def feed(self, event: cs.Event) -> list[cs.Action]:
        before_open = self.turn.request_open
        before_running = [c for c, s in self.turn.calls.items() if s == "running"]
        was_ended = self.turn.ended
        if isinstance(event, cs.CallStarted) and not before_open and not was_ended:
            return []  # a call comes only from a running request (the session never starts one otherwise)
        actions = self.turn.step(event)
        for action in actions:
            if isinstance(action, cs.Finish):
                self.finished += 1
                assert not was_ended, "a turn ended twice"
            elif isinstance(action, cs.AskFollowUp):
                self.follow_ups += 1
                assert not was_ended, "the model was asked again after the turn ended"
                assert not before_open or isinstance(event, cs.RequestEnded)  # never while the model runs
                assert "running" not in self.turn.calls.values()
            elif isinstance(action, cs.StopCall):
                assert action.call_id in before_running or isinstance(event, cs.CallStarted)
            elif isinstance(action, cs.ReportOutcome):
                assert action.call_id not in self.reported, "an outcome was taken twice"
                assert not was_ended, "an outcome was reported after the turn ended"
                self.reported.add(action.call_id)
            elif isinstance(action, cs.KeepOutcome):
                assert action.call_id not in self.kept and action.call_id not in self.reported
                self.kept.add(action.call_id)
        if isinstance(event, cs.TurnEnded) and not was_ended:
            self.ended_outside = True
            self.detach_allowed = event.reason == "turn_detected"
        self.check()
        return actions

    def check(self) -> None:
        turn = self.turn
        assert self.finished <= 1
        assert turn.follow_ups == self.follow_ups <= cs.MAX_FOLLOW_UPS
        if turn.ended:
            assert "running" not in turn.calls.values(), "an ended turn left a call running"
            if not self.detach_allowed:
                assert "detached" not in turn.calls.values()
        else:
            assert "detached" not in turn.calls.values()
        assert not (self.finished and self.ended_outside), "ended from outside and by itself"


def settle(observer: Observer) -> None:
    """Deliver what is owed: the open request ends (no new calls), every running or detached call returns."""
    for _ in range(4 * (cs.MAX_FOLLOW_UPS + len(CALL_IDS)) + 4):
        turn = observer.turn
        if turn.request_open and not turn.ended:
            observer.feed(cs.RequestEnded("completed"))
        elif turn.running:
            observer.feed(cs.CallReturned(turn.running[0], ok=True))
        else:
            break
    assert observer.turn.ended, "the turn waits with nothing left to wait for"
    assert not observer.turn.running


@settings(max_examples=CI_EXAMPLES, deadline=None)
@given(st.lists(EVENTS, max_size=40), st.booleans())
def test_tool_turn_promises_hold_for_any_interleaving(events: list[cs.Event], approved_start: bool) -> None:
    observer = Observer(approved_start)
    if approved_start:  # a response that runs an approved call before the model is asked
        observer.turn.calls["approved"] = "running"
    for event in events:
        observer.feed(event)
    settle(observer)


@settings(max_examples=CI_EXAMPLES, deadline=None)
@given(st.lists(EVENTS, max_size=40))
def test_a_late_outcome_never_reaches_an_ended_turn(events: list[cs.Event]) -> None:
    observer = Observer(False)
    for event in events:
        observer.feed(event)
    observer.feed(cs.TurnEnded("client_cancelled"))
    for call_id in CALL_IDS:
        for late in (cs.CallReturned(call_id, ok=True), cs.CallTimedOut(call_id)):
            actions = observer.feed(late)
            assert not any(isinstance(a, cs.ReportOutcome | cs.AskFollowUp | cs.Finish) for a in actions)


def test_the_happy_path_asks_once_then_ends() -> None:
    turn = cs.ToolTurn()
    assert turn.step(cs.CallStarted("a")) == []
    assert turn.step(cs.RequestEnded("completed")) == []  # the call still runs: wait
    assert turn.step(cs.CallReturned("a", ok=True)) == [cs.ReportOutcome("a"), cs.AskFollowUp()]
    assert turn.step(cs.RequestEnded("completed")) == [cs.Finish("completed")]
    assert turn.step(cs.CallReturned("a", ok=True)) == []  # a duplicate result is ignored


def test_speech_over_a_call_detaches_it_and_keeps_its_result() -> None:
    turn = cs.ToolTurn()
    turn.step(cs.CallStarted("a"))
    assert turn.step(cs.TurnEnded("turn_detected")) == []
    assert turn.calls["a"] == "detached"
    assert turn.step(cs.CallReturned("a", ok=True)) == [cs.KeepOutcome("a")]


def test_cancel_stops_running_calls_and_a_hung_tool_times_out() -> None:
    turn = cs.ToolTurn()
    turn.step(cs.CallStarted("a"))
    assert turn.step(cs.TurnEnded("client_cancelled")) == [cs.StopCall("a")]
    hung = cs.ToolTurn()
    hung.step(cs.CallStarted("h"))
    hung.step(cs.RequestEnded("completed"))
    assert hung.step(cs.CallTimedOut("h")) == [cs.ReportOutcome("h"), cs.AskFollowUp()]
    assert hung.calls["h"] == "timed_out"


def test_a_model_that_keeps_calling_is_stopped() -> None:
    turn = cs.ToolTurn()
    asks = 0
    for round_ in range(cs.MAX_FOLLOW_UPS + 2):
        turn.step(cs.CallStarted(f"c{round_}"))
        turn.step(cs.RequestEnded("completed"))
        actions = turn.step(cs.CallReturned(f"c{round_}", ok=True))
        asks += actions.count(cs.AskFollowUp())
        if cs.Finish("completed") in actions:
            break
    assert asks == cs.MAX_FOLLOW_UPS and turn.ended
