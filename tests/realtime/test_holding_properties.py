"""Invariants of the holding phrases' rule over random timelines (hypothesis), beside the tool-call properties.

:func:`~speech_to_speech.realtime.tools.holding.step` is woken at any times
(the driver may wake early, late or twice), while audio is sent (the
preamble, the model's words, the phrases themselves), the server asks for a
preamble, and the response ends (answered, cancelled, spoken over). After
every step: at most ``MAX_HOLDS`` phrases in the wait; none once it ended;
each one only after the user's speaker has been quiet ``hold_after_s`` since
the last thing it played and the last phrase asked for. And the rule never
sleeps through a due phrase: woken when it said to be, with nothing said
meanwhile, it speaks (until the wait has had its phrases or ended).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.realtime.tools.holding import (
    HOLD_AFTER_FACTOR,
    MAX_HOLDS,
    MIN_HOLD_AFTER_MS,
    Hold,
    Wait,
    WakeAt,
    hold_after_s,
    step,
)

CI_EXAMPLES = int(os.environ.get("S2S_PROPERTY_EXAMPLES", "400"))
GAPS = st.floats(min_value=0.0, max_value=6.0, allow_nan=False)

# What happens, after a gap (seconds): audio sent (its length), a preamble asked for, a wake, the end.
EVENTS = st.one_of(
    st.tuples(st.just("audio"), GAPS, st.floats(min_value=0.02, max_value=4.0, allow_nan=False)),
    st.tuples(st.just("ask"), GAPS, st.just(0.0)),
    st.tuples(st.just("wake"), GAPS, st.just(0.0)),
    st.tuples(st.just("end"), GAPS, st.just(0.0)),
)


@dataclass
class Timeline:
    """The clock, the user's speaker (the send clock of conversation/playback.py) and the wait, as a session
    would drive them, with what the rule said."""

    after_s: float
    now: float = 100.0
    quiet_at: float = 0.0
    last_asked: float = -1.0e9  # the last preamble or holding phrase asked for
    wait: Wait = field(default_factory=Wait)
    ended_at: float | None = None
    holds: list[float] = field(default_factory=list)

    def apply(self, kind: str, gap: float, seconds: float) -> None:
        self.now += gap
        if kind == "audio":
            self.quiet_at = max(self.quiet_at, self.now) + seconds
        elif kind == "ask":
            self.wait, self.last_asked = self.wait.asked(self.now), self.now
        elif kind == "end":
            self.wait = self.wait.ended()
            self.ended_at = self.now if self.ended_at is None else self.ended_at
        else:
            self.wake()

    def wake(self) -> Hold | WakeAt | None:
        quiet_since = max(self.quiet_at, self.last_asked)
        self.wait, decision = step(self.wait, self.now, self.quiet_at, self.after_s)
        if isinstance(decision, Hold):
            assert self.ended_at is None, "a phrase after the response ended"
            assert self.now >= quiet_since + self.after_s, "a phrase before the quiet was long enough"
            assert decision.index == len(self.holds) and decision.wake_at > self.now
            self.holds.append(self.now)
            self.last_asked = self.now
        elif isinstance(decision, WakeAt):
            assert decision.at > self.now and decision.at == quiet_since + self.after_s
        assert len(self.holds) <= MAX_HOLDS
        return decision


@settings(max_examples=CI_EXAMPLES, deadline=None)
@given(st.integers(min_value=0, max_value=60_000), st.lists(EVENTS, max_size=40))
def test_phrases_are_few_late_enough_and_never_after_the_end(preamble_after_ms: int,
                                                             events: list[tuple[str, float, float]]) -> None:
    timeline = Timeline(hold_after_s(preamble_after_ms))
    for kind, gap, seconds in events:
        timeline.apply(kind, gap, seconds)


@settings(max_examples=CI_EXAMPLES, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.lists(EVENTS, max_size=30))
def test_a_due_phrase_is_said_when_the_rule_wakes_for_it(preamble_after_ms: int,
                                                        events: list[tuple[str, float, float]]) -> None:
    timeline = Timeline(hold_after_s(preamble_after_ms))
    for kind, gap, seconds in events:
        timeline.apply(kind, gap, seconds)
    # From here nothing more is said but the phrases: each wake the rule asks for speaks until it is done.
    for _ in range(MAX_HOLDS + 1):
        decision = timeline.wake()
        if isinstance(decision, WakeAt):
            timeline.now = decision.at
            decision = timeline.wake()
        if decision is None:
            break
        assert isinstance(decision, Hold)
        timeline.now = decision.wake_at
    assert timeline.wait.over or len(timeline.holds) == MAX_HOLDS


@given(st.integers(min_value=0, max_value=60_000), st.integers(min_value=0, max_value=60_000))
def test_the_quiet_before_a_phrase_grows_with_preamble_after_ms(shorter: int, longer: int) -> None:
    shorter, longer = sorted((shorter, longer))
    assert hold_after_s(shorter) <= hold_after_s(longer)
    # Never a phrase a moment after another, never sooner than the first word's own wait, three times it.
    assert hold_after_s(shorter) >= MIN_HOLD_AFTER_MS / 1000.0
    assert math.isclose(hold_after_s(longer), max(MIN_HOLD_AFTER_MS, HOLD_AFTER_FACTOR * longer) / 1000.0)
