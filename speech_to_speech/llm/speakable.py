"""Tokens a voice cannot say: what a local LLM must not write when its reply is spoken in Latin script.

Asked how to say something in Japanese, SmolLM2-135M answers in Japanese
script; an English voice makes no sound of it, and the user hears nothing.
When every language the unit's voice speaks is written in Latin script, the
llama.cpp backend masks the tokens that would write another script (or emoji):
the model then answers in words the voice can say (SmolLM2: "You can say
\"Arigiya\" in Japanese…"; wrong, but heard). The other local backends do not
apply the mask yet.

A token is a piece of UTF-8, not always whole characters. A piece that
decodes is judged by its letters; a piece that does not is judged by its
lead bytes, which name the block of the character they start.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

# Languages a Latin-script voice speaks (ISO 639-1), the ones TTS backends here declare or may.
LATIN_SCRIPT_LANGUAGES = frozenset({
    "en", "fr", "de", "es", "it", "pt", "nl", "pl", "sv", "da", "no", "nb", "fi", "cs", "sk", "ro", "hu",
    "tr", "id", "ms", "ca", "hr", "sl", "et", "lv", "lt", "ga", "is", "sw", "tl", "vi",
})
# Lead bytes of characters outside Latin script: U+0280-07FF (IPA extensions on: Greek, Cyrillic,
# Hebrew, Arabic, …), U+0800-0FFF (Indic and others), U+3000-FFFF (CJK, kana, Hangul) and U+10000 up
# (emoji among them). U+1000-2FFF (Latin Extended Additional, punctuation, symbols) stays allowed.
_FOREIGN_LEAD_BYTES = frozenset({*range(0xCA, 0xE1), *range(0xE3, 0xF5)})


def speaks_latin_only(languages: Iterable[str] | None) -> bool:
    """Whether a voice declared to speak ``languages`` (None: unknown) speaks only Latin-script languages."""
    if languages is None:
        return False
    codes = [code.split("-")[0].lower() for code in languages]
    return bool(codes) and all(code in LATIN_SCRIPT_LANGUAGES for code in codes)


def _foreign_character(character: str) -> bool:
    if ord(character) >= 0x3000:
        return True  # CJK, kana, Hangul, emoji, private use
    return character.isalpha() and not unicodedata.name(character, "").startswith("LATIN")


def writes_foreign_script(piece: bytes) -> bool:
    """Whether the token ``piece`` writes (or starts) a character outside Latin script."""
    try:
        text = piece.decode("utf-8")
    except UnicodeDecodeError:
        return any(byte in _FOREIGN_LEAD_BYTES for byte in piece)
    return any(_foreign_character(character) for character in text)


def foreign_token_ids(pieces: Sequence[bytes]) -> npt.NDArray[np.intp]:
    """Ids (positions in ``pieces``, a vocabulary's token bytes) of the tokens that write another script."""
    return np.flatnonzero([writes_foreign_script(piece) for piece in pieces])
