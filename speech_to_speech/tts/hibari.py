"""Hibari: the default TTS, a Kokoro-distilled ONNX voice shipped in ``hibari-tts`` (24 kHz).

Only the "heart" voice is inside the package; hibari downloads the others on
first use, which cannot work offline. So a voice is used only when its file
is already on disk, and anything else (Realtime clients send "alloy", "echo",
…) falls back to the default voice instead of failing the response.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from speech_to_speech import registry
from speech_to_speech.config import LoadContext, TTSSettings
from speech_to_speech.pipeline.handler import SpeechLanguageCapabilities
from speech_to_speech.tts.base import Phonemized, TTSHandler
from speech_to_speech.tts.hibari_timing import TimedHibari
from speech_to_speech.tts.padding import trim_padding

log = logging.getLogger(__name__)

SAMPLE_RATE = 24000  # hibari's own output rate (TTSHandler resamples any other to TTS_RATE)


class HibariVoices:
    """One loaded Hibari model per voice, shared by every unit; loads a local voice on first use."""

    def __init__(self, default_voice: str | None = None, threads: int = 1, durations: bool = False) -> None:
        from hibari import voices

        self._catalog: dict[str, Any] = voices.VOICES
        self._voices_module = voices
        self._threads = threads
        self._lock = threading.Lock()
        self._loaded: dict[str, Any] = {}
        # With durations (for the viseme stage), each voice also gets a TimedHibari (None if it cannot).
        self._durations = durations
        self._timed: dict[str, TimedHibari | None] = {}
        self.default = voices.DEFAULT
        if default_voice and self.available(default_voice):
            self.default = default_voice
        elif default_voice:
            log.warning("hibari voice %r is not available offline; using %r", default_voice, self.default)
        self.get(self.default)

    def available(self, voice: str) -> bool:
        """True when the voice's model is in the package or already downloaded."""
        if voice not in self._catalog:
            return False
        try:
            self._voices_module.voice_path(voice, download_missing=False)
        except FileNotFoundError:
            return False
        return True

    @property
    def names(self) -> tuple[str, ...]:
        """The voices it can speak with now (a voice downloaded meanwhile joins them)."""
        return tuple(name for name in self._catalog if name in self._loaded or self.available(name))

    def get(self, voice: str | None) -> Any:
        """The Hibari instance for ``voice``, or the default voice's when it is not available."""
        name = voice if voice and (voice in self._loaded or self.available(voice)) else self.default
        if voice and name != voice:
            log.debug("hibari has no local voice %r; speaking with %r", voice, name)
        with self._lock:
            tts = self._loaded.get(name)
            if tts is None:
                from hibari import Hibari

                tts = Hibari(voice=name, threads=self._threads)
                # Build the lazily created G2P (and its OOV net) now, once, not racing in two units.
                _ = tts.g2p.oov
                self._loaded[name] = tts
                if self._durations:
                    self._timed[name] = TimedHibari.load(tts, self._threads)
        return tts

    def timed(self, tts: Any) -> TimedHibari | None:
        """The voice ``tts`` (from :meth:`get`) with phoneme durations, if they were asked for and can be had."""
        return self._timed.get(tts.voice)


def load_hibari(settings: TTSSettings, context: LoadContext) -> HibariVoices:
    try:
        import hibari  # noqa: F401
    except ImportError as error:
        raise RuntimeError("the hibari TTS needs the hibari-tts package (pip install hibari-tts)") from error
    return HibariVoices(settings.voice, durations=settings.enable_visemes)


@registry.register("tts", "hibari", load_hibari)
class HibariTTS(TTSHandler):
    model: HibariVoices
    sample_rate = SAMPLE_RATE

    @property
    def language_capabilities(self) -> SpeechLanguageCapabilities:
        # English voices only (American and British lexicons); nothing to select.
        return SpeechLanguageCapabilities(languages=("en",), supports_language_selection=False)

    @property
    def voices(self) -> tuple[str, ...]:
        return self.model.names

    def synthesize(self, text: str, voice: str | None, language: str | None) -> Iterator[Phonemized]:
        yield from phonemized_sentences(self.model, text, voice, self.settings.speed)


def phonemized_sentences(voices: HibariVoices, text: str, voice: str | None, speed: float) -> Iterator[Phonemized]:
    """``text`` said by hibari voice ``voice``, one array per sentence as soon as it is ready (what
    hibari's stream() does), with the sentence's phonemes (and their durations when the model gives
    them) for the viseme stage, its padding cut to the pause its punctuation calls for."""
    tts = voices.get(voice)
    timed = voices.timed(tts)
    rng = np.random.default_rng()
    for phonemes in tts.phonemize(text):
        if timed is not None:
            spoken = timed.speak(phonemes, speed, rng)
        else:
            spoken = Phonemized(np.asarray(tts.from_ids(tts.ids(phonemes), speed, rng), np.float32), phonemes)
        if len(spoken.audio):
            yield trim_padding(spoken, SAMPLE_RATE, phonemes)
