"""Which transcripts stop where a sentence cannot end."""

from __future__ import annotations

import pytest

from speech_to_speech.vad.turn_detector import ends_mid_phrase, reads_finished


@pytest.mark.parametrize("text", [
    "I need to buy a present for my", "Turn on the lights in the", "Please add eggs, butter, and",
    "Remind me tomorrow morning to", "What would happen if", "Tell me about ancient Rome, uh,",
    "So, um", "I was thinking that...", "Can you tell me the name of", "Set an alarm because",
])
def test_words_that_cannot_end_a_sentence(text: str) -> None:
    assert ends_mid_phrase(text)


@pytest.mark.parametrize("text", [
    "What is twelve times fifteen?", "What is it for?", "Who are you talking about?", "Turn it up.",
    "I think so", "Play some relaxing music", "", "   ", "Tell me more about it!",
])
def test_words_that_can(text: str) -> None:
    assert not ends_mid_phrase(text)


@pytest.mark.parametrize("text", [
    "Remind me to call my sister on Friday afternoon.", "How far is the moon from the earth?",
    "Turn it off.", "Log in!", "What is twelve times fifteen?",
])
def test_whole_sentences_read_finished(text: str) -> None:
    assert reads_finished(text)


@pytest.mark.parametrize("text", [
    "So I was thinking that maybe we could.", "Can you explain the difference between?",
    "Set an alarm because I.", "Could you recommend a book about.", "I need a present for my",
    "What is the weather", "Tell me more...", "", "Well, um.",
])
def test_phrases_left_hanging_do_not(text: str) -> None:
    assert not reads_finished(text)
