"""`speech-to-speech bench tools` end to end against a scripted server: MCP and function calls, preambles off/on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech import cli
from speech_to_speech.bench import audio
from speech_to_speech.testing.client_audio import tone

SET = {"requests": [
    {"name": "time_tokyo", "split": "tune", "text": "What time is it in Tokyo?",
     "expect": {"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}},
    {"name": "fetch_example", "split": "held_out", "text": "Fetch example.com.",
     "expect": {"name": "fetch", "arguments": {"url": "https://example.com"}}},
]}
TIME_CALL = '<tool_call>get_current_time {"timezone": "Asia/Tokyo"}</tool_call>'  # the scripted LLM's form
FETCH_CALL = '<tool_call>fetch {"url": "example.com"}</tool_call>'
# Each request in both modes: the MCP call and its answer in one response; the fetch, then its answer.
# The last answer is slow to start (4 s): with preambles on, the wait the call's preamble began goes on, so the
# server says a holding phrase 3 s after its speaker went quiet, which is not the result.
SLOW_ANSWER_MS = 4000
REPLIES = [TIME_CALL, "It is nine in Tokyo.", TIME_CALL, "It is nine in Tokyo.",
           FETCH_CALL, "The page says the library opens at nine.", FETCH_CALL,
           f"[[pause:{SLOW_ANSWER_MS}]]The page says the library opens."]
SLOW_S = 0.6


def tones(texts: list[str], rate: int) -> list[audio.Samples]:
    return [tone(0.5, rate) for _ in texts]


def test_bench_tools_scores_the_calls_and_times_the_silence_with_and_without_preambles(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp_server_time", reason="the time MCP server is a dev dependency")
    monkeypatch.setattr(audio, "synthesize", tones)
    monkeypatch.setenv("SPEECH_TO_SPEECH_CACHE", str(tmp_path / "cache"))
    request_set = tmp_path / "set.json"
    request_set.write_text(json.dumps(SET))
    output = tmp_path / "tools.json"
    argv = ["bench", "tools", "--server", "in-process", "--vad", "scripted", "--stt", "scripted", "--llm",
            "scripted", "--tts", "scripted", "--min_silence_ms", "300", "--scripted_tts_ms_per_char", "5",
            "--scripted_replies", *REPLIES, "--set", str(request_set), "--slow-tool-s", str(SLOW_S),
            "--output", str(output)]
    assert cli.main(argv) == 0
    result: dict[str, Any] = json.loads(output.read_text())
    calls = result["summary"]["calls"]
    assert calls["all"]["precision"] == 1.0 and calls["all"]["recall"] == 1.0
    assert calls["tune"]["calls_right"] == 1 and calls["held_out"]["calls_right"] == 1
    by = {(s["request"], s["mode"]): s for s in result["samples"]}
    assert by[("time_tokyo", "no_preamble")]["calls"] == [{"name": "get_current_time",
                                                          "arguments": {"timezone": "Asia/Tokyo"}}]
    for mode in ("no_preamble", "preamble"):
        for request in ("time_tokyo", "fetch_example"):
            sample = by[(request, mode)]
            assert sample["end_of_speech_to_spoken_result_ms"] is not None, sample
            assert sample["end_of_speech_to_first_audio_ms"] <= sample["end_of_speech_to_spoken_result_ms"]
    # Without a preamble the user hears nothing while the client's fetch runs; with one, something first.
    quiet, told = by[("fetch_example", "no_preamble")], by[("fetch_example", "preamble")]
    assert quiet["longest_silence_ms"] >= SLOW_S * 1000
    assert quiet["end_of_speech_to_first_audio_ms"] == quiet["end_of_speech_to_spoken_result_ms"]
    assert told["end_of_speech_to_first_audio_ms"] < told["end_of_speech_to_spoken_result_ms"]
    assert told["reply"].split(" / ")[0] != "The page says the library opens."  # the preamble came first
    # The answer's holding phrase (its first word was late) is not its result: that comes after the pause.
    answer = told["reply"].split(" / ")[-1]
    assert answer.endswith("The page says the library opens.") and answer != "The page says the library opens."
    assert told["end_of_speech_to_spoken_result_ms"] >= (SLOW_S * 1000 + SLOW_ANSWER_MS)
    assert told["end_of_speech_to_result_heard_ms"] >= told["end_of_speech_to_spoken_result_ms"]
    assert told["holding_phrases"] == 1 and result["summary"]["preamble"]["holding_phrases"] == 1
    assert quiet["holding_phrases"] == 0  # preambles off: no phrases of the server's at all
    assert result["summary"]["preamble"]["slow_tool"]["longest_silence_ms"]["n"] == 1
