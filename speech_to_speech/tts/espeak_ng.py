"""espeak-ng, the library and data shipped in ``espeakng-loader``, through ctypes.

A formant synthesiser: robotic, but offline for about a hundred languages
and fast (it speaks a sentence in a few milliseconds). It also writes IPA
phonemes for those languages, which is what Kokoro's non-English voices are
driven with (:mod:`speech_to_speech.tts.kokoro_voices`).

The library keeps one global state (its voice, its callback), so every call
goes through one lock: calls from several units take turns.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

_SYNCHRONOUS = 2  # espeak_AUDIO_OUTPUT: AUDIO_OUTPUT_SYNCHRONOUS, the samples come to our callback
_CHARS_UTF8 = 1
_PHONEMES_IPA = 0x02  # espeak_TextToPhonemes' phonememode: IPA instead of espeak's own alphabet
_RATE = 1  # espeak_PARAMETER espeakRATE: words a minute
DEFAULT_WPM = 175  # espeak-ng's own default rate
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


class _Voice(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("languages", ctypes.c_void_p), ("identifier", ctypes.c_char_p),
                ("gender", ctypes.c_ubyte), ("age", ctypes.c_ubyte), ("variant", ctypes.c_ubyte),
                ("xx1", ctypes.c_ubyte), ("score", ctypes.c_int), ("spare", ctypes.c_void_p)]


@dataclass(frozen=True)
class EspeakVoice:
    """One of espeak-ng's voices: its name for ``SetVoiceByName`` and the languages it speaks (first: its own)."""

    name: str
    identifier: str
    languages: tuple[str, ...]


class EspeakNG:
    """The loaded library: voices, speech and IPA, one call at a time."""

    def __init__(self) -> None:
        try:
            import espeakng_loader
        except ImportError as error:
            raise RuntimeError("the espeak TTS needs espeak-ng: pip install espeakng-loader") from error
        self._lib = ctypes.CDLL(espeakng_loader.get_library_path())
        self._lib.espeak_Initialize.restype = ctypes.c_int
        self._lib.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_Voice))
        self._lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        self._lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
        data = espeakng_loader.get_data_path().encode()
        self.sample_rate = int(self._lib.espeak_Initialize(_SYNCHRONOUS, 0, data, 0))
        if self.sample_rate <= 0:
            raise RuntimeError(f"espeak-ng did not start with its data at {data.decode()}")
        self._lock = threading.Lock()
        self._chunks: list[npt.NDArray[np.int16]] = []
        self._callback = _CALLBACK(self._collect)  # kept referenced: the library calls it later
        self._lib.espeak_SetSynthCallback(self._callback)
        self._current: str | None = None
        self.voices = self._list_voices()

    def _collect(self, wav: Any, count: int, events: Any) -> int:
        if count > 0 and wav:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0

    def _list_voices(self) -> tuple[EspeakVoice, ...]:
        found, listed = [], self._lib.espeak_ListVoices(None)
        for index in range(10_000):
            entry = listed[index]
            if not entry:
                break
            voice = entry.contents
            found.append(EspeakVoice(voice.name.decode(), voice.identifier.decode(), _languages(voice)))
        return tuple(found)

    def _use(self, voice: str) -> None:
        if voice != self._current:
            if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise ValueError(f"espeak-ng has no voice {voice!r}")
            self._current = voice

    def speak(self, text: str, voice: str, speed: float = 1.0) -> npt.NDArray[np.int16]:
        """``text`` said by ``voice`` (a name or language code espeak-ng knows), at ``sample_rate``."""
        encoded = text.encode()
        with self._lock:
            self._use(voice)
            self._lib.espeak_SetParameter(_RATE, round(DEFAULT_WPM * speed), 0)
            self._chunks = []
            self._lib.espeak_Synth(encoded, len(encoded) + 1, 0, 0, 0, _CHARS_UTF8, None, None)
            chunks, self._chunks = self._chunks, []
        return np.concatenate(chunks) if chunks else np.zeros(0, np.int16)

    def ipa(self, text: str, voice: str) -> str:
        """``text`` as IPA phonemes in ``voice``'s language, its clauses joined by a space."""
        buffer = ctypes.create_string_buffer(text.encode())
        pointer = ctypes.c_void_p(ctypes.addressof(buffer))
        clauses = []
        with self._lock:
            self._use(voice)
            while pointer.value:
                piece = self._lib.espeak_TextToPhonemes(ctypes.byref(pointer), _CHARS_UTF8, _PHONEMES_IPA)
                if piece:
                    clauses.append(piece.decode().strip())
        return " ".join(clause for clause in clauses if clause)


def _languages(voice: _Voice) -> tuple[str, ...]:
    """espeak_VOICE.languages: a priority byte, a language name and a NUL, again, until a zero byte."""
    raw = ctypes.string_at(voice.languages, 512) if voice.languages else b""
    found, at = [], 0
    while at < len(raw) and raw[at] != 0:
        end = raw.index(b"\0", at + 1)
        found.append(raw[at + 1:end].decode())
        at = end + 1
    return tuple(found)


@cache
def espeak() -> EspeakNG:
    """The process's one espeak-ng (the library holds global state)."""
    return EspeakNG()


def voice_for(language: str, voices: tuple[EspeakVoice, ...]) -> EspeakVoice | None:
    """espeak-ng's voice for a language code ("fr", "pt-br"), or None if it speaks none.

    The voice named after the code comes first ("roa/fr", French of France,
    before Belgium's and Switzerland's, which also list "fr"), then one whose
    own language it is, then any that lists it.
    """
    wanted = language.lower()
    base = wanted.split("-")[0]
    for accept in (wanted, base):
        ranked = (
            [v for v in voices if v.identifier.rsplit("/", 1)[-1].lower() == accept],
            [v for v in voices if v.languages[:1] == (accept,)],
            [v for v in voices if accept in v.languages],
        )
        for found in ranked:
            if found:
                return found[0]
    return None


def speak_chunks(engine: EspeakNG, text: str, voice: str, speed: float) -> Iterator[npt.NDArray[np.int16]]:
    """The speech of ``text``, one array per sentence so the first is heard before the last is made."""
    from hibari import tts as hibari_tts

    for sentence in hibari_tts.Hibari.split_sentences(text):
        audio = engine.speak(sentence, voice, speed)
        if len(audio):
            yield audio
