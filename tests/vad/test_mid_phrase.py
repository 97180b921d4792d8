"""Which transcripts stop where a sentence cannot end."""

from __future__ import annotations

import pytest

from speech_to_speech.vad.turn_detector import ends_mid_phrase


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
