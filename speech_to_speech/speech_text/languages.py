"""Language codes and their English names, one table for the wire and the prompt.

Codes are ISO 639-1 as Whisper writes them; a name maps back to its code
("English" -> "en") the way session language validation and the
capabilities endpoint normalise a client's value.
"""

from __future__ import annotations

LANGUAGE_NAMES: dict[str, str] = {
    "af": "afrikaans", "ar": "arabic", "bg": "bulgarian", "bn": "bengali", "ca": "catalan", "cs": "czech",
    "cy": "welsh", "da": "danish", "de": "german", "el": "greek", "en": "english", "es": "spanish",
    "et": "estonian", "fa": "persian", "fi": "finnish", "fr": "french", "he": "hebrew", "hi": "hindi",
    "hr": "croatian", "hu": "hungarian", "id": "indonesian", "it": "italian", "ja": "japanese",
    "ko": "korean", "lt": "lithuanian", "lv": "latvian", "ms": "malay", "nl": "dutch", "no": "norwegian",
    "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sk": "slovak",
    "sl": "slovenian", "sr": "serbian", "sv": "swedish", "sw": "swahili", "ta": "tamil", "th": "thai",
    "tl": "tagalog", "tr": "turkish", "uk": "ukrainian", "ur": "urdu", "vi": "vietnamese", "zh": "chinese",
}
_CODES_BY_NAME = {name: code for code, name in LANGUAGE_NAMES.items()}


def normalize_language(value: str) -> str:
    """Trim, lowercase, and map a known name ("English") to its code ("en")."""
    cleaned = value.strip().lower()
    return _CODES_BY_NAME.get(cleaned, cleaned)


def base_language(code: str | None) -> str | None:
    """The language of a code without its region ("pt-br" -> "pt"); None for "auto" and for none chosen."""
    if not code or code == "auto":
        return None
    return code.split("-")[0].lower()


def language_name(code: str) -> str:
    """The English name of a code, capitalised for a sentence ("fr" -> "French"); the code where unknown."""
    name = LANGUAGE_NAMES.get(code)
    return name.capitalize() if name else code
