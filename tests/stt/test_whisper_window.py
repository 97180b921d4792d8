"""The short-window guard: what makes a Whisper transcript untrustworthy (no model needed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.stt.whisper_window import (
    Decoded,
    ends_sentence,
    going_on,
    going_on_tokens,
    measured_continuation,
    repeated_phrase,
    suspicious,
)


def decoded(text: str, avg_logprob: float = -0.2, hit_limit: bool = False) -> Decoded:
    return Decoded(text, len(text.split()), avg_logprob, hit_limit)


@pytest.mark.parametrize("text", [
    " Please set a timer for ten minutes.",
    " So, um, next month I'm going to Italy. Should I learn some Italian?",
    " No, no, no. Very, very good.",  # short repeats are speech, not a loop
    " What is the capital of France? And what is the capital of Spain?",
    "",
])
def test_ordinary_transcripts_pass(text: str) -> None:
    assert suspicious(decoded(text)) is None


@pytest.mark.parametrize("text", [
    " Turn off the lights in the living room. Turn off the lights in the living room.",
    " Play some relaxing music for about an hour, for about an hour.",
    " What is the weather today?" * 12,
    " How far away is the moon from the earth. How far away is the moon",
])
def test_a_repeated_phrase_is_suspicious(text: str) -> None:
    assert repeated_phrase(text)
    assert suspicious(decoded(text)) is not None


def test_a_decode_cut_at_its_budget_or_unsure_is_suspicious() -> None:
    assert suspicious(decoded(" Please set a timer", hit_limit=True)) == "ran into the token budget"
    assert suspicious(decoded(" Police at a timer.", avg_logprob=-1.3)) is not None


# A toy vocabulary in token order: what may follow where a sentence could have ended.
PIECES = [".", " and", ",", " To", " to", "?", " the", "...", " -", "!", "…", " I", "ing"]


def test_tokens_that_go_on_with_the_sentence() -> None:
    marked = going_on_tokens(PIECES)
    assert [piece for piece, goes_on in zip(PIECES, marked, strict=True) if goes_on] == [
        " and", ",", " to", " the", "...", " -", "…"]  # a capitalised word is mostly a restart


def test_the_probability_of_going_on_is_that_of_the_marked_tokens() -> None:
    marked = going_on_tokens(PIECES)
    logits = np.log(np.array([0.5, 0.3, 0.1, 0.1] + [1e-12] * (len(PIECES) - 4)))
    assert going_on(logits, marked) == pytest.approx(0.4)
    # Suppressed tokens come back as -inf and weigh nothing; a longer (padded) vocabulary is fine.
    padded = np.concatenate([logits, [-np.inf, 3.0]])
    assert going_on(padded, marked) < going_on(logits, marked)
    assert going_on(np.concatenate([logits, [-np.inf]]), marked) == pytest.approx(0.4)


@given(st.lists(st.floats(-30, 30), min_size=len(PIECES), max_size=len(PIECES)))
def test_going_on_is_a_probability(logits: list[float]) -> None:
    assert 0.0 <= going_on(np.array(logits), going_on_tokens(PIECES)) <= 1.0 + 1e-9


@pytest.mark.parametrize(("text", "ends"), [
    (" I was reading about black holes.", True), (" How far is it?", True), (' He said "stop!"', True),
    (" So I was thinking...", False), (" I'd like to know whether it's going to", False), ("", False),
])
def test_what_ends_as_a_sentence(text: str, ends: bool) -> None:
    assert ends_sentence(text) is ends


def _steps(count: int, last: list[float]) -> list[np.ndarray]:
    """``count`` decoding steps over the toy vocabulary; the last one scores ``last``."""
    flat = np.zeros(len(PIECES))
    return [flat] * (count - 1) + [np.log(np.array(last))]


def test_the_doubt_is_measured_at_the_step_that_wrote_the_final_punctuation() -> None:
    marked = going_on_tokens(PIECES)
    last = [0.5, 0.3, 0.1, 0.1] + [1e-12] * (len(PIECES) - 4)  # "." 0.5; " and" and "," 0.4 between them
    assert measured_continuation(" I was reading about black holes.", _steps(6, last), marked) == pytest.approx(0.4)
    assert measured_continuation(" I was reading about black holes.", [], marked) is None  # nobody measured it


@given(st.sampled_from([" I'd like to know whether it's going to", " So I was thinking...", " Tell me a story about",
                        " milk and eggs and", ""]),
       st.lists(st.floats(-30, 30), min_size=len(PIECES), max_size=len(PIECES)), st.integers(1, 12))
def test_words_that_do_not_end_as_a_sentence_carry_no_continuation(text: str, last: list[float], steps: int) -> None:
    scores = [np.zeros(len(PIECES))] * (steps - 1) + [np.array(last)]
    assert measured_continuation(text, scores, going_on_tokens(PIECES)) is None
