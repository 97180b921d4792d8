"""faster-whisper with the packaged Whisper tiny.en: it hears what hibari says."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from speech_to_speech.pipeline.messages import Transcript, Utterance
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.stt.faster_whisper import FasterWhisperSTT, packaged_model_path

pytestmark = pytest.mark.real_models


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def test_packaged_model_is_a_ctranslate2_folder() -> None:
    folder = packaged_model_path()
    assert (folder / "model.bin").is_file() and (folder / "tokenizer.json").is_file()


def test_transcribes_a_spoken_sentence(whisper: Any, spoken: Any, sentence: str, make_handler: Any) -> None:
    stt = make_handler(FasterWhisperSTT, whisper)
    audio = spoken(sentence)
    (transcript,) = stt.process(Utterance(audio, 0, 1000, item_id="item_1"))
    assert isinstance(transcript, Transcript) and transcript.final
    assert transcript.item_id == "item_1" and transcript.language == "en"
    assert transcript.audio_seconds == pytest.approx(len(audio) / 16000)
    assert {"quick", "brown", "fox", "lazy", "dog", "near"} <= words(transcript.text)


def test_english_only_model_ignores_another_language(whisper: Any, spoken: Any, make_handler: Any) -> None:
    stt = make_handler(FasterWhisperSTT, whisper, config=RuntimeConfig(language="fr"))
    assert stt.language() == "fr"
    text, language = stt.transcribe(spoken("Please turn on the kitchen lights."), stt.language())
    assert language == "en"
    assert {"kitchen", "lights"} <= words(text)


def test_empty_and_silent_turns_give_no_words(whisper: Any, make_handler: Any) -> None:
    stt = make_handler(FasterWhisperSTT, whisper)
    assert stt.transcribe(np.zeros(0, np.float32), None) == ("", None)
    text, _ = stt.transcribe(np.zeros(16000, np.float32), None)
    assert len(words(text)) <= 1  # Whisper may hallucinate a filler word on pure silence, never a sentence
