"""`talk` and `local` with the real offline default models: a synthesised spoken question gets a spoken answer."""

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
from speech_to_speech.testing.server import running_server

pytestmark = pytest.mark.real_models


@pytest.fixture(scope="module")
def question(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from speech_to_speech.tts.hibari import load_hibari

    speech = load_hibari(*loading("tts", ServerSettings())).get(None)("What is the capital of France?", seed=0)
    path = tmp_path_factory.mktemp("real") / "question.wav"
    write_wav(path, np.concatenate([np.zeros(12000, np.float32), speech]), 24000)
    return path


def heard(path: Path) -> str:
    """What Whisper hears in the answer WAV."""
    from speech_to_speech.stt.faster_whisper import load_faster_whisper

    answer, rate = read_wav(path)
    assert rate == 24000 and len(answer) > rate // 2  # at least half a second of reply
    whisper = load_faster_whisper(*loading("stt", ServerSettings()))
    segments, _ = whisper.transcribe(resample(answer, rate, 16000), language="en")
    return " ".join(segment.text for segment in segments).strip()


def test_talk_to_a_served_server_with_the_default_models(question: Path, tmp_path: Path, capsys: Any) -> None:
    with running_server(ServerSettings(log_level="warning")) as server:
        code = cli.main(["talk", "--url", server.ws_url, "--input-wav", str(question),
                         "--output-wav", str(tmp_path / "answer.wav")])
    assert code == 0
    out = capsys.readouterr().out
    assert "capital of france" in out.lower()
    assert "Assistant: " in out
    assert heard(tmp_path / "answer.wav")  # real speech: Whisper transcribes it to words


def test_local_with_the_default_models(question: Path, tmp_path: Path, capsys: Any) -> None:
    code = cli.main(["local", "--log_level", "warning", "--input-wav", str(question),
                     "--output-wav", str(tmp_path / "answer.wav")])
    assert code == 0
    assert "capital of france" in capsys.readouterr().out.lower()
    assert heard(tmp_path / "answer.wav")
