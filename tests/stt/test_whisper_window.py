"""The short-window guard: what makes a Whisper transcript untrustworthy (no model needed)."""

from __future__ import annotations

import pytest

from speech_to_speech.stt.whisper_window import Decoded, repeated_phrase, suspicious


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
