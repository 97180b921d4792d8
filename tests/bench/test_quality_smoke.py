"""`speech-to-speech bench quality` end to end against a scripted server: spoken turns, scoring, tool round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech import cli
from speech_to_speech.bench import audio, report
from speech_to_speech.testing.client_audio import tone

SET = {"requests": [
    {"name": "fact", "category": "fact", "turns": ["What is the capital of France?"], "expect": ["Paris"]},
    {"name": "follow", "category": "multiturn", "turns": ["My name is Sam.", "What is my name?"], "expect": ["Sam"]},
    {"name": "weather", "category": "tool", "tools": True, "turns": ["Weather in Paris?"],
     "call": {"name": "get_weather", "arguments": {"city": "Paris"}}, "expect": ["sunny"]},
]}
# The scripted LLM answers each request in turn: right, context then wrong, a call then its spoken result.
REPLIES = ["Paris is the capital of France.", "Nice to meet you.", "I do not know your name.",
           '<tool_call>get_weather {"city": "Paris"}</tool_call>', "It is sunny in Paris."]


def tones(texts: list[str], rate: int) -> list[audio.Samples]:
    """Stands in for the voice: a tone per text is speech to the scripted VAD."""
    return [tone(0.5, rate) for _ in texts]


def test_bench_quality_scores_spoken_requests_and_a_tool_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audio, "synthesize", tones)
    monkeypatch.setenv("SPEECH_TO_SPEECH_CACHE", str(tmp_path / "cache"))
    request_set = tmp_path / "set.json"
    request_set.write_text(json.dumps(SET))
    output = tmp_path / "quality.json"
    argv = ["bench", "quality", "--server", "in-process", "--vad", "scripted", "--stt", "scripted", "--llm",
            "scripted", "--tts", "scripted", "--min_silence_ms", "300", "--scripted_tts_ms_per_char", "5",
            "--scripted_replies", *REPLIES, "--set", str(request_set), "--warmup", "0", "--output", str(output)]
    assert cli.main(argv) == 0
    result: dict[str, Any] = json.loads(output.read_text())
    summary = result["summary"]
    assert summary["by_category"] == {"fact": {"accuracy": 1.0, "right": 1, "n": 1},
                                      "multiturn": {"accuracy": 0.0, "right": 0, "n": 1},
                                      "tool": {"accuracy": 1.0, "right": 1, "n": 1}}
    assert summary["tool_calls"] == {"made": 1, "right": 1, "expected": 1, "precision": 1.0, "recall": 1.0,
                                     "result_spoken": "1 of 1"}
    # Every turn has audio: the tool turn's answer is a call, and a preamble is said before it (No dead air).
    assert summary["end_of_speech_to_first_audio_ms"]["n"] == 4
    assert result["config"]["request_set"] == str(request_set)  # a set file by its path; a packaged one by name
    fact, follow, weather = result["samples"]
    assert fact["turns"][0]["reply"] == "Paris is the capital of France." and fact["correct"]
    assert [t["reply"] for t in follow["turns"]] == ["Nice to meet you.", "I do not know your name."]
    assert weather["turns"][0]["calls"] == [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert weather["follow_up"] == "It is sunny in Paris."
    table = report.markdown(report.load_results(tmp_path))
    assert "| scripted (scripted) | **67%** | 100% | – | – | – | 0% | 100% | 100% / 100% |" in table
