"""`local --preset quality --tool-module …` offline: a spoken request runs the tool and its result is spoken."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech import cli
from speech_to_speech.audio.resample import resample
from speech_to_speech.audio.wav import read_wav, write_wav
from speech_to_speech.config import ServerSettings
from speech_to_speech.testing.engine import loading

pytestmark = pytest.mark.real_models


def test_the_quality_preset_calls_a_local_tool_and_speaks_its_result(tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("llama_cpp", reason="the quality preset runs on llama.cpp (the llama-cpp extra)")
    from speech_to_speech.stt.faster_whisper import load_faster_whisper
    from speech_to_speech.tts.hibari import load_hibari

    question = load_hibari(*loading("tts", ServerSettings())).get(None)("What is the temperature in the room?", seed=0)
    pause = np.zeros(24000, np.float32)
    write_wav(tmp_path / "question.wav", np.concatenate([pause, question, pause]), 24000)

    code = cli.main(
        ["local", "--preset", "quality", "--log_level", "warning", "--tool-module",
         "speech_to_speech.bench.quality_tools", "--input-wav", str(tmp_path / "question.wav"),
         "--output-wav", str(tmp_path / "answer.wav")]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "get_room_temperature" in out, out  # the call was made and run by the client
    answer, rate = read_wav(tmp_path / "answer.wav")
    assert rate == 24000 and len(answer) > rate // 2
    whisper = load_faster_whisper(*loading("stt", ServerSettings()))
    segments, _ = whisper.transcribe(resample(answer, 24000, 16000), language="en")
    heard = " ".join(segment.text for segment in segments).lower()
    assert re.search(r"\b21\b|twenty[- ]one", heard), heard  # the tool's 21 °C, spoken
