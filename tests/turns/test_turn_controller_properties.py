"""Invariants of the turn controller over generated turns: silence, speech, and answers in any order.

The harness plays the VAD's part (a speculative utterance at 64 ms of
silence, the detector asked with it) and delivers verdicts, words and
readiness, about the current pause or an older one, whenever the sequence says.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.pipeline.messages.turn_taking import TurnVerdict
from speech_to_speech.turns.controller import NOTHING, Answer, TurnController, TurnRules
from speech_to_speech.turns.rules import EAGERNESS, SENTENCE_PAUSE_MS

CHUNK_MS = 32
SPECULATE_AT_MS = 64

TEXTS = ["Well, let me think.", "I would like a present for my", "What is it for?", "and the", "",
         "東京です。", "日本の首都は、", "Quelle est la capitale de la"]
LANGUAGES = st.sampled_from([None, "en", "fr", "ja"])  # what the STT heard the words in

older = st.sampled_from([False, False, True])  # mostly about the current pause
answer = st.one_of(
    st.tuples(st.just("verdict"), older, st.one_of(st.none(), st.just(0.95), st.floats(0.0, 1.0))),
    st.tuples(st.just("words"), older, st.sampled_from(TEXTS), st.one_of(st.none(), st.floats(0.0, 0.5)), LANGUAGES),
    st.tuples(st.just("ready"), older),
)
# All three answers about the current pause, the story of a finished turn, in any order.
complete = st.permutations([("verdict", False, 0.95), ("words", False, TEXTS[0], None, None), ("ready", False)])
gap = st.tuples(st.just("silence"), st.integers(0, 6))
# One pause: some silence, answers with silence between them, then speech, near-speech, or more silence.
pause = st.tuples(
    st.tuples(st.just("silence"), st.integers(1, 8)),
    st.one_of(complete, st.lists(answer, max_size=4)),
    st.lists(gap, min_size=4, max_size=4),  # a gap after each answer (zip stops at the answers)
    st.sampled_from([("speak",), ("band",), ("silence", 20)]),
).map(lambda p: [p[0], *[event for pair in zip(p[1], p[2], strict=False) for event in pair], p[3]])
events = st.lists(pause, max_size=6).map(lambda pauses: [event for p in pauses for event in p])

turn_rules = st.builds(
    TurnRules,
    judges=st.booleans() | st.just(True),
    silence_ms=st.sampled_from([320, 480, 640]),
    turn_pause_ms=st.sampled_from([96, 192]),
    finished_pause_ms=st.sampled_from([96, 192, 320, 416]),
    max_turn_silence_ms=st.sampled_from([960, 1920]),
    level=st.sampled_from(list(EAGERNESS.values())),
    take_back_ms=st.sampled_from([0, 300, 600]),
)


def check_end(answer: Answer, silent_ms: int, rules: TurnRules) -> None:
    """A turn ends only on as much silence as its outcome needs."""
    assert silent_ms > 0, "a turn never ends while the user speaks"
    outcome = answer.decision.outcome if answer.decision else None
    if outcome is None:
        assert silent_ms >= rules.silence_ms
        return
    assert rules.judges and silent_ms >= rules.turn_pause_ms
    if outcome == "finished" or (outcome == "disputed" and rules.take_back_ms >= rules.silence_ms):
        assert silent_ms >= min(rules.finished_floor_ms, rules.finished_cap_ms)
        if not rules.takes_back and rules.level.waits_between_sentences:
            assert silent_ms >= min(SENTENCE_PAUSE_MS, rules.finished_cap_ms)
    elif outcome == "timed_out":
        assert silent_ms >= rules.max_silence_ms
    else:
        assert outcome in ("no_answer", "disputed") and silent_ms >= rules.silence_ms


@settings(max_examples=400, deadline=None)
@given(rules=turn_rules, script=events)
def test_a_turn_ends_once_on_enough_silence_and_stale_answers_change_nothing(
        rules: TurnRules, script: list[tuple[Any, ...]]) -> None:
    turns = TurnController()
    silent_ms, ended = 0, False

    def answered(answer: Answer) -> None:
        nonlocal ended
        if ended:
            assert answer == NOTHING, "an ended turn is not ended again, nor decided on"
        if answer.report is not None:
            assert answer.report.outcome == "unfinished" and silent_ms >= rules.turn_pause_ms
        if answer.end:
            check_end(answer, silent_ms, rules)
            ended = True

    for event in script:
        kind, *args = event
        if kind in ("verdict", "words", "ready") and args[0]:
            # About an older pause (or one that never was): nothing may change.
            before = dict(vars(turns))
            if kind == "verdict":
                answer = turns.verdict(TurnVerdict("item_1", turns.pause - 1, args[1], 30.0), rules, 1.0)
            elif kind == "words":
                answer = turns.words(turns.speculation - 1, args[1], args[2], rules, 1.0, args[3])
            else:
                answer = turns.reply_ready(turns.speculation - 1, rules)
            assert answer == NOTHING and vars(turns) == before
        elif kind == "verdict":
            answered(turns.verdict(TurnVerdict("item_1", turns.pause, args[1], 30.0), rules, 1.0))
        elif kind == "words":
            answered(turns.words(turns.speculation, args[1], args[2], rules, 1.0, args[3]))
        elif kind == "ready":
            answered(turns.reply_ready(turns.speculation, rules))
        elif kind == "speak":
            silent_ms = 0
            turns.speech_resumes()
            answered(turns.silence(0, rules, 1.0, started=True))
        elif kind == "band":
            silent_ms = 0
            turns.pause_ends()
            answered(turns.silence(0, rules, 1.0, started=True))
        else:
            for _ in range(args[0]):
                silent_ms += CHUNK_MS
                answered(turns.silence(silent_ms, rules, 1.0, started=True))
                if silent_ms >= SPECULATE_AT_MS and not turns.speculation_stands and not ended:
                    assert turns.speculate() == turns.pause
                    if rules.judges:
                        turns.ask(1.0)


@settings(max_examples=200, deadline=None)
@given(rules=turn_rules, pauses=st.lists(st.integers(1, 20), min_size=1, max_size=8))
def test_pauses_are_numbered_in_order_and_only_the_latest_is_current(rules: TurnRules, pauses: list[int]) -> None:
    turns = TurnController()
    for number, chunks in enumerate(pauses, start=1):
        for chunk in range(1, chunks + 1):
            if turns.silence(chunk * CHUNK_MS, rules, 1.0, started=False).end:
                return
        assert turns.pause == number and turns.is_current(number)
        assert not any(turns.is_current(older) for older in range(number))
        turns.speech_resumes()
        assert not turns.is_current(number)
