"""Which language a reply is written in, and how the model is told.

A request carries the language the user spoke (the session's, or the one
the STT heard). The reply is written in it when the unit's voice speaks it;
otherwise in the voice's first language, so that what the model writes can
be heard: a French question to an English-only voice is answered in English.
A reply in English to English speech, or to a request with no language, is
asked exactly as before: no words are added to the prompt, so its cached
prefix and its answers stay as they were.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.speech_text.languages import base_language, language_name


def reply_language(heard: str | None, voice_languages: Sequence[str] | None) -> str | None:
    """The language of a reply to speech in ``heard`` spoken by a voice of ``voice_languages`` (None: unknown)."""
    heard = base_language(heard)
    if heard is None or voice_languages is None:
        return heard
    spoken = [code for code in (base_language(language) for language in voice_languages) if code]
    return heard if heard in spoken or not spoken else spoken[0]


def language_rule(heard: str, reply: str) -> str:
    """The sentence that tells the model which language to answer in.

    Short and an order: Qwen2.5-0.5B repeated "The user speaks Thai." back as
    its whole answer when told what the user speaks; "Answer in Japanese only."
    it followed in French, Spanish and Japanese.
    """
    if heard == reply:
        return f"Answer in {language_name(reply)} only."
    return f"Answer in {language_name(reply)} only, even when the user speaks {language_name(heard)}."


def answer_in_language(request: GenerateResponseRequest, voice_languages: Sequence[str] | None,
                       default_instructions: str) -> GenerateResponseRequest:
    """``request`` with its reply's language as ``language`` and, unless that is English to English, the rule
    in its instructions (after the session's own, or the server's default prompt)."""
    heard = base_language(request.language)
    reply = reply_language(heard, voice_languages)
    if heard is None or reply is None:
        return replace(request, language=None)
    if heard == reply == "en":
        return replace(request, language=reply)
    instructions = request.instructions or default_instructions
    rule = language_rule(heard, reply)
    return replace(request, language=reply, instructions=f"{instructions}\n{rule}" if instructions else rule)
