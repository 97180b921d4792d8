"""Which language a reply is written in, and the rule that tells the model."""

from __future__ import annotations

import pytest

from speech_to_speech.llm.answer_language import answer_in_language, reply_language
from speech_to_speech.llm.base import LLMHandler
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest


@pytest.mark.parametrize(("heard", "voice", "reply"), [
    ("fr", None, "fr"),  # a voice of unknown languages: the user's
    ("fr", ("en", "fr", "ja"), "fr"),
    ("pt-BR", ("en", "pt"), "pt"),
    ("de", ("en",), "en"),  # the voice cannot say German: its own language
    ("auto", ("en",), None),
    (None, ("en",), None),
])
def test_the_reply_language(heard: str | None, voice: tuple[str, ...] | None, reply: str | None) -> None:
    assert reply_language(heard, voice) == reply


def test_english_to_english_adds_nothing_to_the_prompt() -> None:
    request = GenerateResponseRequest("r", 0, (), language="en-US")
    asked = answer_in_language(request, ("en",), "Default prompt.")
    assert asked.language == "en" and asked.instructions is None


def test_another_language_adds_its_rule_after_the_default_prompt() -> None:
    asked = answer_in_language(GenerateResponseRequest("r", 0, (), language="ja"), ("en", "ja"), "Default prompt.")
    assert asked.language == "ja" and asked.instructions == "Default prompt.\nAnswer in Japanese only."


def test_the_mask_follows_the_reply_language_not_every_voice() -> None:
    """A unit that speaks English and Japanese writes Japanese script only in a Japanese reply."""
    llm = LLMHandler.__new__(LLMHandler)
    llm.voice_languages = ("en", "fr", "ja")
    assert llm.speaks_in_latin_script(GenerateResponseRequest("r", 0, (), language="fr"))
    assert not llm.speaks_in_latin_script(GenerateResponseRequest("r", 0, (), language="ja"))
    assert not llm.speaks_in_latin_script(GenerateResponseRequest("r", 0, ()))  # unknown: any voice may speak
