"""Speech language capabilities: what the STT and TTS can honour, and session validation.

Handlers report native metadata (``SpeechLanguageCapabilities``); deployment
declarations (``--stt_supported_languages`` …) fill what is unknown and may
narrow it, never widen or contradict it (that is a startup error). The same
normalisation serves ``GET /v1/realtime/capabilities`` and the validation of
a session's language.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.handler import SpeechLanguageCapabilities
from speech_to_speech.protocol.error_codes import INVALID_REQUEST
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.speech_text.languages import LANGUAGE_NAMES, normalize_language


def _entry(code: str) -> dict[str, Any]:
    return {"code": code, "name": LANGUAGE_NAMES.get(code)}


@dataclass(frozen=True)
class StageLanguages:
    languages: tuple[str, ...] | None
    supports_language_selection: bool
    supports_auto: bool | None

    def to_json(self) -> dict[str, Any]:
        return {
            "languages": None if self.languages is None else [_entry(c) for c in self.languages],
            "supports_language_selection": self.supports_language_selection,
            "supports_auto": self.supports_auto,
        }

    def honours(self, code: str) -> bool:
        if self.languages is not None and code not in self.languages:
            return False
        # A fixed single-language adapter honours its one language without a control.
        return self.supports_language_selection or self.languages == (code,)


def apply_declaration(
    stage: str, native: SpeechLanguageCapabilities, declared: list[str] | None, declared_auto: bool | None
) -> StageLanguages:
    languages = native.languages
    if declared is not None:
        codes = tuple(dict.fromkeys(normalize_language(c) for c in declared))
        if languages is not None and not set(codes) <= set(languages):
            extra = sorted(set(codes) - set(languages))
            raise ValueError(
                f"--{stage}_supported_languages declares {extra}, which the {stage} backend does not support"
            )
        languages = codes
    supports_auto = native.supports_auto
    if declared_auto is not None:
        if supports_auto is not None and supports_auto != declared_auto:
            raise ValueError(
                f"--{stage}_auto_language_supported {str(declared_auto).lower()} conflicts with the {stage} "
                f"backend, which reports {str(supports_auto).lower()}"
            )
        supports_auto = declared_auto
    return StageLanguages(languages, native.supports_language_selection, supports_auto)


class LanguageService:
    def __init__(self, stt: StageLanguages, tts: StageLanguages) -> None:
        self.stt = stt
        self.tts = tts
        if stt.languages is not None and tts.languages is not None:
            self.languages: tuple[str, ...] | None = tuple(c for c in stt.languages if c in tts.languages)
            self.selectable: tuple[str, ...] | None = tuple(
                c for c in self.languages if stt.honours(c) and tts.honours(c)
            )
        else:
            self.languages = self.selectable = None
        self.session_auto_supported = stt.supports_auto is not False and tts.supports_auto is not False

    @classmethod
    def from_handlers(
        cls, settings: ServerSettings, stt: SpeechLanguageCapabilities, tts: SpeechLanguageCapabilities
    ) -> LanguageService:
        return cls(
            apply_declaration("stt", stt, settings.stt.supported_languages, settings.stt.auto_language_supported),
            apply_declaration("tts", tts, settings.tts.supported_languages, settings.tts.auto_language_supported),
        )

    def capabilities(self, pipelines: int, voices: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The endpoint's pipelines; ``voices``: the names the TTS speaks with (None: it cannot list them)."""
        conversation = {
            "languages": None if self.languages is None else [_entry(c) for c in self.languages],
            "selectable_languages": None if self.selectable is None else [_entry(c) for c in self.selectable],
            "session_auto_supported": self.session_auto_supported,
        }
        return {
            "pipelines": [
                {"index": i, "stt": self.stt.to_json(), "tts": {**self.tts.to_json(), "voices": voices},
                 "conversation": conversation}
                for i in range(pipelines)
            ]
        }

    def validate_session_language(self, language: str | None, event_id: str | None) -> str | None:
        if language is None:
            return None
        code = normalize_language(language)
        if code == "auto":
            if not self.session_auto_supported:
                raise RealtimeError(INVALID_REQUEST, "This server's adapters do not accept language 'auto'",
                                    param="session.audio.input.transcription.language", event_id=event_id)
            return code
        if self.selectable is not None and code not in self.selectable:
            choices = ", ".join(self.selectable) or "none"
            raise RealtimeError(
                INVALID_REQUEST,
                f"Language {language!r} is not supported by this pipeline (selectable: {choices})",
                param="session.audio.input.transcription.language",
                event_id=event_id,
            )
        return code
