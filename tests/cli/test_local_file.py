"""`speech-to-speech local --input-wav … --output-wav …` with scripted backends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech import cli
from speech_to_speech.audio.wav import read_wav, write_wav
from speech_to_speech.config import ServerSettings
from speech_to_speech.local_file import FileSession
from speech_to_speech.testing.engine import running_unit, scripted_settings, silence, speech
from speech_to_speech.testing.scripted import tone

SCRIPTED = ["--vad", "scripted", "--stt", "scripted", "--llm", "scripted", "--tts", "scripted"]
REPO = Path(__file__).resolve().parents[2]


def local(tmp_path: Path, audio: np.ndarray, rate: int, *flags: str) -> tuple[int, Path]:
    question, answer = tmp_path / "question.wav", tmp_path / "answer.wav"
    write_wav(question, audio, rate)
    code = cli.main(["local", *SCRIPTED, "--input-wav", str(question), "--output-wav", str(answer), *flags])
    return code, answer


def test_a_spoken_question_gives_a_spoken_answer(tmp_path: Path) -> None:
    question, answer = tmp_path / "q.wav", tmp_path / "a.wav"
    write_wav(question, tone(1.0, 22050), 22050)
    result = subprocess.run(
        [sys.executable, "-m", "speech_to_speech", "local", *SCRIPTED, "--log_level", "warning",
         "--input-wav", str(question), "--output-wav", str(answer)],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "user: What is the capital of France?" in result.stdout
    assert "assistant: Paris is the capital of France." in result.stdout
    samples, rate = read_wav(answer)
    assert rate == 24000
    assert len(samples) / rate == pytest.approx(len("Paris is the capital of France.") * 0.06, abs=0.05)
    assert np.abs(samples).max() > 0.1


def test_two_turns_with_a_pause_give_two_answers_and_a_history(tmp_path: Path, capsys: Any) -> None:
    stereo = np.stack([np.concatenate([tone(0.8, 48000), np.zeros(3 * 48000, np.float32), tone(0.8, 48000)])] * 2, 1)
    code, answer = local(
        tmp_path, stereo, 48000,
        "--scripted_transcripts", "First question?", "Second question?",
        "--scripted_replies", "One.", "Two, again.",
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["user: First question?", "assistant: One.", "user: Second question?", "assistant: Two, again."]
    samples, rate = read_wav(answer)
    # Two answers with a silent gap between them.
    voiced = np.flatnonzero(np.abs(samples) > 0.05)
    assert np.diff(voiced).max() / rate == pytest.approx(0.5, abs=0.01)
    assert len(samples) / rate == pytest.approx((len("One.") + len("Two, again.")) * 0.06 + 0.5, abs=0.1)


def test_the_running_history_reaches_the_llm() -> None:
    settings = scripted_settings(scripted_transcripts=["a", "b", "c"], chat_size=1)
    seen: list[tuple[str, ...]] = []
    with running_unit(settings) as unit:
        original = unit.submit

        def spy(request: Any) -> None:
            seen.append(tuple(f"{m.role}:{m.content}" for m in request.messages))
            original(request)

        unit.submit = spy  # type: ignore[method-assign]
        audio = np.concatenate([speech(0.6), silence(1.0)] * 3)
        turns, _ = FileSession(unit, settings, lambda who, text: None).run(audio)
    assert [t.transcript for t in turns] == ["a", "b", "c"]
    reply = "assistant:Paris is the capital of France."
    assert seen == [("user:a",), ("user:a", reply, "user:b"), ("user:b", reply, "user:c")]


def test_realtime_pacing_gives_the_same_answer(tmp_path: Path, capsys: Any) -> None:
    code, answer = local(tmp_path, tone(0.4, 16000), 16000, "--realtime", "--trailing-silence-s", "0.8")
    assert code == 0
    assert "assistant: Paris is the capital of France." in capsys.readouterr().out
    assert len(read_wav(answer)[0]) > 0


def test_silence_only_is_an_error(tmp_path: Path, capsys: Any) -> None:
    code, answer = local(tmp_path, np.zeros(16000, np.float32), 16000)
    assert code == 1
    assert "no speech" in capsys.readouterr().err
    assert answer.exists() and len(read_wav(answer)[0]) == 0


def test_a_failed_answer_makes_the_command_fail(tmp_path: Path, capsys: Any) -> None:
    code, _ = local(tmp_path, tone(0.8, 16000), 16000, "--scripted_replies", "[[failed:model down]]")
    assert code == 1
    assert "model down" in capsys.readouterr().out


def test_default_settings_keep_the_offline_backends() -> None:
    settings = ServerSettings()
    assert (settings.vad, settings.stt, settings.llm, settings.tts) == (
        "silero", "faster-whisper", "transformers", "hibari"
    )  # fmt: skip
