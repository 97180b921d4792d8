"""Piper voices (VITS, ONNX) fetched from the hub, driven by espeak-ng's IPA.

Piper's voices are not packaged on any registry we can use offline (one
English voice is, under the GPL); with ``--tts_hub_voices`` a voice is
fetched from ``rhasspy/piper-voices`` on first use: its ``.onnx`` model and
``.onnx.json`` config, which names the espeak-ng voice that phonemizes it
and maps each IPA symbol to the model's ids. We phonemize with the packaged
espeak-ng and run the model with onnxruntime, so the ``piper-tts`` package
is not needed.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech.tts.hub import fetch

PIPER_REPO = "rhasspy/piper-voices"
# A medium-quality voice per language that Kokoro does not speak offline or from the hub.
HUB_PIPER_VOICES: dict[str, str] = {
    "de": "de_DE-thorsten-medium", "nl": "nl_NL-mls-medium", "pl": "pl_PL-gosia-medium",
    "ru": "ru_RU-irina-medium", "uk": "uk_UA-ukrainian_tts-medium", "sv": "sv_SE-nst-medium",
    "tr": "tr_TR-dfki-medium", "cs": "cs_CZ-jirka-medium", "fi": "fi_FI-harri-medium",
}
BOS, EOS, PAD = "^", "$", "_"  # Piper's start, end and between-phoneme symbols


def voice_language(name: str) -> str | None:
    """The language of a Piper voice name ("de_DE-thorsten-medium" -> "de"); None for another form."""
    parts = name.split("-")
    if len(parts) != 3 or "_" not in parts[0]:
        return None
    return parts[0].split("_")[0].lower()


def hub_paths(name: str) -> tuple[str, str]:
    """The model's and its config's paths in the voices repository."""
    region, speaker, quality = name.split("-")
    folder = f"{region.split('_')[0]}/{region}/{speaker}/{quality}"
    return f"{folder}/{name}.onnx", f"{folder}/{name}.onnx.json"


class PiperVoice:
    """One Piper model: IPA in, float32 audio at ``sample_rate`` out."""

    def __init__(self, model: Path, config: Path) -> None:
        import onnxruntime as ort

        settings: dict[str, Any] = json.loads(config.read_text("utf-8"))
        self.sample_rate = int(settings["audio"]["sample_rate"])
        self.espeak_voice = str(settings["espeak"]["voice"])
        self._ids: dict[str, list[int]] = settings["phoneme_id_map"]
        inference = settings.get("inference", {})
        self._scales = np.array([inference.get("noise_scale", 0.667), inference.get("length_scale", 1.0),
                                 inference.get("noise_w", 0.8)], dtype=np.float32)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()

    def ids(self, phonemes: str) -> list[int]:
        """Piper's ids of an IPA string: start, each known symbol followed by the pad, end."""
        ids = [*self._ids[BOS], *self._ids[PAD]]
        for symbol in phonemes:
            if symbol in self._ids:
                ids += [*self._ids[symbol], *self._ids[PAD]]
        return [*ids, *self._ids[EOS]]

    def speak(self, phonemes: str, speed: float = 1.0) -> npt.NDArray[np.float32]:
        ids = self.ids(phonemes)
        scales = self._scales.copy()
        scales[1] /= speed  # length scale: larger is slower
        feed: dict[str, Any] = {"input": np.array([ids], dtype=np.int64),
                                "input_lengths": np.array([len(ids)], dtype=np.int64), "scales": scales}
        if "sid" in self._inputs:
            feed["sid"] = np.array([0], dtype=np.int64)
        with self._lock:
            (audio,) = self._session.run(None, feed)[:1]
        return np.asarray(audio, dtype=np.float32).reshape(-1)


def hub_voice(name: str) -> PiperVoice:
    """Piper voice ``name`` from the hub (fetched once into its cache). Raises HubUnavailable."""
    model, config = hub_paths(name)
    return PiperVoice(fetch(PIPER_REPO, model), fetch(PIPER_REPO, config))
