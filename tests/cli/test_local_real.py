"""`local` file mode with the real offline default models: a spoken question gets a spoken answer."""

from __future__ import annotations

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


def test_local_answers_a_synthesised_question_with_speech(tmp_path: Path, capsys: Any) -> None:
    from speech_to_speech.stt.faster_whisper import load_faster_whisper
    from speech_to_speech.tts.hibari import load_hibari

    question = load_hibari(*loading("tts", ServerSettings())).get(None)("What is the capital of France?", seed=0)
    pause = np.zeros(24000, np.float32)
    write_wav(tmp_path / "question.wav", np.concatenate([pause, question, pause]), 24000)

    code = cli.main(
        ["local", "--log_level", "warning", "--input-wav", str(tmp_path / "question.wav"),
         "--output-wav", str(tmp_path / "answer.wav")]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "capital of france" in out.lower()

    answer, rate = read_wav(tmp_path / "answer.wav")
    assert rate == 24000 and len(answer) > rate // 2
    whisper = load_faster_whisper(*loading("stt", ServerSettings()))
    segments, _ = whisper.transcribe(resample(answer, 24000, 16000), language="en")
    heard = " ".join(segment.text for segment in segments).lower()
    assert "paris" in heard, heard
