"""Which transcripts stop where a sentence cannot end, and how that weighs with the turn model's score."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.vad.turn_detector import (
    EAGERNESS,
    MAX_CONTINUATION,
    ends_mid_phrase,
    judged_finished,
    reads_finished,
)


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


@pytest.mark.parametrize("text", ["I was reading about black holes.", "Remind me tomorrow morning."])
def test_a_sentence_the_stt_doubts_does_not_read_finished(text: str) -> None:
    """Whisper's full stop where the speech went on ("… black holes [and]"): its doubt decides."""
    assert reads_finished(text) and reads_finished(text, None)  # no measure: the words alone
    assert reads_finished(text, MAX_CONTINUATION / 2)
    assert not reads_finished(text, MAX_CONTINUATION)
    assert not reads_finished(text, 0.9)


def test_no_certainty_makes_hanging_words_read_finished() -> None:
    assert not reads_finished("So I was thinking that maybe we could.", 0.0)
    assert not reads_finished("What is the weather", 0.0)


MEDIUM, HIGH = EAGERNESS["medium"], EAGERNESS["high"]


@pytest.mark.parametrize(("probability", "words", "level", "finished"), [
    (0.6, "What is twelve times fifteen?", MEDIUM, True),  # reads finished: the usual score
    (0.4, "What is twelve times fifteen?", MEDIUM, False),  # does not sound finished
    (0.97, "How many cups of flour do I need for?", MEDIUM, False),  # neither: a confident score is needed
    (0.99, "How many cups of flour do I need for?", MEDIUM, True),
    (0.95, "How many cups of flour do I need for?", HIGH, True),  # an eager session needs less
    (0.75, "How do I say thank you very much in", MEDIUM, False),
    (0.999, "I need a present for my", MEDIUM, False),  # stops mid-phrase: never finished
    (0.6, "", MEDIUM, True),  # nothing heard to weigh: the score decides
    (0.6, None, MEDIUM, True),
])
def test_judged_finished(probability: float, words: str | None, level: object, finished: bool) -> None:
    assert judged_finished(probability, words, level) is finished  # type: ignore[arg-type]


@pytest.mark.parametrize(("probability", "continuation", "finished"), [
    (0.96, None, True),  # Smart Turn scored the cut "Remind me tomorrow morning [to]" 0.96
    (0.96, 0.05, True),
    (0.96, 0.45, False),  # the STT doubted its full stop: the words no longer read finished
    (0.99, 0.45, True),  # and a confident score still ends the turn, as for any words left open
    (0.4, 0.0, False),
])
def test_judged_finished_weighs_the_stt_doubt(probability: float, continuation: float | None,
                                              finished: bool) -> None:
    assert judged_finished(probability, "Remind me tomorrow morning.", MEDIUM, continuation) is finished


# ------------------------------------------------------------------ other languages


@pytest.mark.parametrize(("text", "language"), [
    ("Quelle est la capitale de l'Italie ?", "fr"), ("東京です。", "ja"), ("Wie spät ist es?", "de"),
    ("日本の首都はどこですか？", "ja"),
])
def test_other_languages_read_finished_on_their_final_mark(text: str, language: str) -> None:
    assert reads_finished(text, None, language) and not ends_mid_phrase(text, language)


@pytest.mark.parametrize(("text", "language"), [
    ("日本の首都は、", "ja"), ("Je voudrais un cadeau pour ma...", "fr"), ("Ich möchte, äh,", "de"),
])
def test_other_languages_go_on_after_a_comma_or_an_ellipsis(text: str, language: str) -> None:
    assert ends_mid_phrase(text, language) and not reads_finished(text, None, language)


def test_english_words_lists_do_not_judge_another_language() -> None:
    """"a", "the", "to" end many a finished sentence elsewhere (French "il y a", Spanish "la", "a")."""
    assert ends_mid_phrase("Il y a", "en") and not ends_mid_phrase("Il y a", "fr")
    assert not reads_finished("¿Vamos a?", None, "en") and reads_finished("¿Vamos a?", None, "es")
    level = EAGERNESS["auto"]
    assert judged_finished(0.6, "Voy a.", level, None, "es") and not judged_finished(0.6, "Voy a.", level)
    # Whisper often leaves a Japanese question without its mark: the score decides, as it sounded finished.
    assert judged_finished(0.9, "日本の首都はどこですか", level, None, "ja")
    assert not judged_finished(0.9, "What is the capital of", level, None, "en")


@given(probability=st.floats(0.0, 1.0), words=st.text(max_size=40), language=st.sampled_from(["fr", "ja", "de"]),
       continuation=st.one_of(st.none(), st.floats(0.0, 1.0)))
def test_in_another_language_only_the_score_and_the_marks_decide(
        probability: float, words: str, language: str, continuation: float | None) -> None:
    level = EAGERNESS["auto"]
    text = words.strip()
    decided = judged_finished(probability, words, level, continuation, language)
    # No English word list: a trailing comma or ellipsis says it goes on, else the score alone decides.
    goes_on = text.endswith(("...", "…", ",", "-", "—", "、", "，", "،"))
    assert decided == (probability >= level.finished_at and not goes_on)
