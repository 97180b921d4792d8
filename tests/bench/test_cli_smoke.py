"""`speech-to-speech bench …` end to end against scripted servers it starts: tiny runs, the JSON's shape.

No figure is checked against a speed: only that every figure is there, timed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech import cli
from speech_to_speech.audio.wav import write_wav
from speech_to_speech.bench import capacity, latency, load, overhead, turns
from speech_to_speech.bench.cli import server_settings
from speech_to_speech.config import ServerSettings, flat_settings
from speech_to_speech.testing.client_audio import silence, tone
from speech_to_speech.testing.server import running_server

# In-process servers start fastest; the capacity test keeps the default, a child process.
IN_PROCESS = ["--server", "in-process"]
SCRIPTED = ["--vad", "scripted", "--stt", "scripted", "--llm", "scripted", "--tts", "scripted",
            "--min_silence_ms", "300", "--scripted_tts_ms_per_char", "5"]


def run(argv: list[str], output: Path) -> dict[str, Any]:
    assert cli.main([*argv, "--output", str(output)]) == 0
    return json.loads(output.read_text())


def assert_common_shape(result: dict[str, Any], name: str) -> None:
    assert result["benchmark"] == name
    assert result["command"].startswith("speech-to-speech")
    env = result["environment"]
    for key in ("cpu", "cores", "ram_gib", "python", "packages", "load_average"):
        assert key in env
    assert set(env["packages"]) >= {"torch", "onnxruntime", "ctranslate2", "transformers"}
    assert env["server"]["pipeline"] == {"vad": "scripted", "stt": "scripted", "llm": "scripted", "tts": "scripted"}
    assert env["server"]["flags"]["vad"] == "scripted"


def assert_timed(stats: dict[str, Any], n: int) -> None:
    assert stats["n"] == n and isinstance(stats["p50"], float) and isinstance(stats["p95"], float)


def test_bench_latency_writes_its_figures(questions: Path, tmp_path: Path) -> None:
    result = run(["bench", "latency", *IN_PROCESS, *SCRIPTED, "--questions-dir", str(questions), "--repeat", "2",
                  "--warmup", "0", "--chunk-ms", "40"], tmp_path / "latency.json")
    assert_common_shape(result, "latency")
    assert result["config"]["chunk_ms"] == 40  # as a microphone sends it, recorded with the figures
    assert set(result["summary"]) == set(latency.FIGURES)
    for name in ("end_of_speech_to_first_audio_ms", "send_ms", "wire_ms"):
        assert_timed(result["summary"][name], 2)
    assert [s["question"] for s in result["samples"]] == ["q1.wav", "q1.wav"]
    assert all(s["status"] == "completed" and s["reply"] for s in result["samples"])
    assert result["config"]["questions"] == ["q1.wav"]


def spoken(*parts: float) -> np.ndarray:
    """Tone, silence, tone, … (seconds): a request with pauses, as the scripted VAD hears it."""
    return np.concatenate([tone(s, 24000) if i % 2 == 0 else silence(s, 24000) for i, s in enumerate(parts)])


def test_bench_turns_counts_answers_and_catches_a_double_answer(tmp_path: Path) -> None:
    clips = tmp_path / "clips"
    write_wav(clips / "a_pauses.wav", spoken(0.4, 0.15, 0.3, 0.2, 0.4), 24000)  # pauses under min_silence_ms
    write_wav(clips / "b_split.wav", spoken(0.5, 1.0, 0.5), 24000)  # a pause that ends a turn: two answers
    (clips / "README.md").write_text("| a_pauses.wav | Um, set a timer. |\n")
    result = run(["bench", "turns", *IN_PROCESS, *SCRIPTED, "--clips-dir", str(clips), "--warmup", "0",
                  "--settle-s", "0.5"], tmp_path / "turns.json")
    assert_common_shape(result, "turns")
    summary = result["summary"]
    assert (summary["requests"], summary["answered"], summary["double_answers"], summary["errors"]) == (2, 2, 1, 0)
    assert summary["unanswered"] == [] and summary["not_completed"] == {}
    assert_timed(summary[turns.LATENCY], 2)
    whole, split = result["samples"]
    assert (whole["request"], whole["text"], whole["answered"], whole["double"]) == ("a_pauses.wav",
                                                                                     "Um, set a timer.", True, False)
    assert [r["status"] for r in whole["responses"]] == ["completed"] and whole["responses"][0]["reply"]
    assert len(whole["heard"]) == 1
    assert split["double"] and split["audio_responses"] == 2 and len(split["heard"]) == 2
    assert [c["longest_pause_ms"] for c in result["config"]["clips"]] == [200.0, 1000.0]
    defaults = flat_settings(ServerSettings())
    assert result["config"]["server_turn_settings"] == {
        "min_silence_ms": 300, "speculation_silence_ms": defaults["speculation_silence_ms"],
        "turn_detector": "smart-turn", "turn_pause_ms": defaults["turn_pause_ms"],
        "max_turn_silence_ms": defaults["max_turn_silence_ms"]}


def test_bench_turns_without_clips_says_so(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "empty").mkdir()
    assert cli.main(["bench", "turns", *IN_PROCESS, *SCRIPTED, "--clips-dir", str(tmp_path / "empty"),
                     "--output", str(tmp_path / "turns.json")]) == 1
    assert "no WAV files" in capsys.readouterr().err
    assert not (tmp_path / "turns.json").exists()


def process_gone(pid: int) -> bool:
    """No process ``pid``, or only a zombie of one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def test_bench_load_says_the_corpus_alone_beside_a_busy_core_and_two_at_once(tmp_path: Path) -> None:
    clips = tmp_path / "clips"
    write_wav(clips / "a_short.wav", spoken(0.5), 24000)
    write_wav(clips / "b_pause.wav", spoken(0.4, 0.15, 0.4), 24000)
    result = run(["bench", "load", *IN_PROCESS, *SCRIPTED, "--clips-dir", str(clips), "--warmup", "0",
                  "--settle-s", "0.5"], tmp_path / "load.json")
    assert_common_shape(result, "load")
    summary = result["summary"]
    phases = summary["phases"]
    assert list(phases) == list(load.PHASES) == result["config"]["phases"]
    for stats in phases.values():
        assert (stats["requests"], stats["answered"], stats["double_answers"], stats["errors"]) == (2, 2, 0, 0)
        assert_timed(stats[turns.LATENCY], 2)
    assert summary["all_answered"] is True and (summary["requests"], summary["answered"]) == (6, 6)
    assert [(s["phase"], s["request"]) for s in result["samples"]] == [
        (phase, name) for phase in load.PHASES for name in ("a_short.wav", "b_pause.wav")]
    two = phases["two_at_once"]
    (pair,) = two["pairs"]
    assert pair["requests"] == ["a_short.wav", "b_pause.wav"] and isinstance(pair["start_skew_ms"], float)
    together = [s for s in result["samples"] if s["phase"] == "two_at_once"]
    assert [(s["pair"], s["partner"]) for s in together] == [(0, "b_pause.wav"), (0, "a_short.wav")]
    assert pair["slower_ms"] == max(s[turns.LATENCY] for s in together)
    assert_timed(two[load.SLOWER], 1)
    assert summary["alone_p50_ms"] == phases["alone"][turns.LATENCY]["p50"]
    for name in ("busy_neighbour_ratio", "two_at_once_ratio", "two_at_once_slowest_ratio",
                 "two_at_once_slowest_max_ratio"):
        assert isinstance(summary[name], float) and summary[name] > 0
    assert summary["busy_neighbour_ratio"] == round(phases["busy_neighbour"][turns.LATENCY]["p50"]
                                                    / summary["alone_p50_ms"], 3)
    neighbour = phases["busy_neighbour"]["neighbour"]
    assert neighbour["ended_by_itself"] is False and neighbour["cpu_s"] > 0
    assert process_gone(neighbour["pid"])  # killed after its phase
    assert result["environment"]["server"]["flags"]["num_pipelines"] == 2  # two sessions at once


def test_bench_load_phases_pick_a_subset(tmp_path: Path) -> None:
    clips = tmp_path / "clips"
    write_wav(clips / "a_short.wav", spoken(0.5), 24000)
    result = run(["bench", "load", *IN_PROCESS, *SCRIPTED, "--clips-dir", str(clips), "--warmup", "0",
                  "--settle-s", "0.5", "--phases", "two_at_once,alone"], tmp_path / "load.json")
    summary = result["summary"]
    assert list(summary["phases"]) == ["alone", "two_at_once"] and summary["busy_neighbour_ratio"] is None
    assert [pair["requests"] for pair in summary["phases"]["two_at_once"]["pairs"]] == [["a_short.wav"] * 2]
    assert isinstance(summary["two_at_once_ratio"], float)


def test_bench_load_refuses_a_server_with_one_unit(tmp_path: Path, capsys: Any) -> None:
    clips = tmp_path / "clips"
    write_wav(clips / "a_short.wav", spoken(0.5), 24000)
    settings = ServerSettings.model_validate({**dict.fromkeys(("vad", "stt", "llm", "tts"), "scripted"),
                                              "num_pipelines": 1})
    with running_server(settings) as server:
        assert cli.main(["bench", "load", "--url", server.ws_url, "--clips-dir", str(clips),
                         "--output", str(tmp_path / "load.json")]) == 1
    assert "1 pipeline unit(s); two_at_once needs 2" in capsys.readouterr().err
    assert not (tmp_path / "load.json").exists()


def test_bench_load_rejects_an_unknown_phase(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench", "load", "--phases", "alone,crowded"])
    assert exit_info.value.code == 2
    assert "phases are alone, busy_neighbour, two_at_once" in capsys.readouterr().err


def test_bench_capacity_writes_a_level_per_session_count(tmp_path: Path) -> None:
    result = run(["bench", "capacity", *SCRIPTED, "--scripted_stt_delay_ms", "0", "--scripted_token_delay_ms", "0",
                  "--sessions", "1,2", "--turns", "1", "--stagger-s", "0"], tmp_path / "capacity.json")
    assert_common_shape(result, "capacity")
    summary = result["summary"]
    assert set(summary["sessions"]) == {"1", "2"}
    for count, stats in summary["sessions"].items():
        assert stats["errors"] == 0
        for name in capacity.FIGURES:
            assert_timed(stats[name], int(count))
    assert summary["max_sessions_within_budget"] in (0, 1, 2)
    assert isinstance(summary["baseline_ms"], float)
    assert result["environment"]["server"]["flags"]["num_pipelines"] == 2  # one unit per session
    assert result["environment"]["server"]["started_by_bench"] == "subprocess"
    assert sorted(s["session"] for s in result["samples"] if s["sessions"] == 2) == [0, 1]


def test_bench_capacity_can_end_every_sessions_speech_at_one_instant(tmp_path: Path) -> None:
    folder = tmp_path / "questions"  # two requests, 0.8 s of voice apart
    write_wav(folder / "q1.wav", np.concatenate([np.zeros(2400, np.float32), tone(0.4, 24000)]), 24000)
    write_wav(folder / "q2.wav", np.concatenate([np.zeros(2400, np.float32), tone(1.2, 24000)]), 24000)
    result = run(["bench", "capacity", *SCRIPTED, "--sessions", "2", "--turns", "2", "--ends", "together",
                  "--speech", "questions", "--questions-dir", str(folder)], tmp_path / "capacity.json")
    summary = result["summary"]
    assert summary["ends"] == "together" and summary["sessions"]["2"]["errors"] == 0
    assert summary["max_talkers_within_ratio"] in (0, 2)
    for number in (0, 1):
        ends = [s["end_of_speech_at_ms"] for s in result["samples"] if s["turn"] == number]
        assert len(ends) == 2 and max(ends) - min(ends) < 100, ends  # 20 ms chunks; 800 ms apart if started together


def test_bench_overhead_times_every_hop(tmp_path: Path) -> None:
    result = run(["bench", "overhead", *IN_PROCESS, "--min_silence_ms", "300", "--turns", "2"],
                 tmp_path / "overhead.json")
    assert_common_shape(result, "overhead")
    assert set(result["summary"]) == set(overhead.FIGURES)
    for name in ("append_to_speech_started_ms", "tts_to_audio_delta_ms", "send_to_wire_ms"):
        assert_timed(result["summary"][name], 2)


def test_bench_bargein_cancels_a_long_scripted_answer(questions: Path, tmp_path: Path) -> None:
    result = run(["bench", "bargein", *IN_PROCESS, *SCRIPTED, "--scripted_token_delay_ms", "20", "--questions-dir",
                  str(questions), "--inject-after-ms", "100", "--settle-ms", "200", "--repeat", "1"],
                 tmp_path / "bargein.json")
    assert_common_shape(result, "bargein")
    summary = result["summary"]
    assert (summary["trials"], summary["missed"], summary["min_speech_ms"]) == (1, 0, 250)
    (sample,) = result["samples"]
    assert sample["status"] == "cancelled" and sample["reason"] == "turn_detected"
    assert_timed(summary["speech_to_cancelled_ms"], 1)
    assert summary["stale_audio_ms"]["p50"] == 0.0


def test_bench_servers_get_what_their_benchmark_needs() -> None:
    args = argparse.Namespace(sessions=(1, 8))
    scripted = ServerSettings.model_validate({"llm": "scripted"})
    assert server_settings("capacity", args, scripted).server.num_pipelines == 8
    assert server_settings("capacity", args, scripted.updated(num_pipelines=9)).server.num_pipelines == 9
    assert server_settings("bargein", args, scripted).testing.replies  # a long answer to interrupt
    assert server_settings("load", argparse.Namespace(phases=None), scripted).server.num_pipelines == 2
    assert server_settings("load", argparse.Namespace(phases=("alone",)), scripted) == scripted
    assert server_settings("latency", args, scripted) == scripted


def test_bench_needs_a_benchmark(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench"])
    assert exit_info.value.code == 2
    assert "latency" in capsys.readouterr().err


def test_bench_echo_runs_every_mode_and_room_and_the_offline_figures(questions: Path, tmp_path: Path) -> None:
    result = run(["bench", "echo", *IN_PROCESS, *SCRIPTED, "--scripted_token_delay_ms", "20", "--questions-dir",
                  str(questions), "--delays-ms", "150", "--repeat", "1", "--timeout", "8", "--ack-every-ms", "50",
                  "--busy-neighbours", "1"],
                 tmp_path / "echo.json")
    assert_common_shape(result, "echo")
    assert result["config"]["ack_every_ms"] == 50
    summary = result["summary"]
    [neighbour] = summary["neighbours"]  # it spun through the trials, and was killed after them
    assert neighbour["cpu_s"] > 0 and neighbour["ended_by_itself"] is False
    assert {summary[mode]["trials"] for mode in ("off", "on")} == {1}
    for sample in (s for s in result["samples"] if s["kind"] == "echo"):  # when each self-interruption came
        assert len(sample["self_interruption_ms_into_answer"]) == sample["self_interruptions"]
        assert all(ms >= 0 for ms in sample["self_interruption_ms_into_answer"])
    assert summary["off"]["self_interruption_ms_into_answer"]["n"] == summary["off"]["self_interruptions"]
    kinds = sorted((s["kind"], s.get("mode") or s.get("echo")) for s in result["samples"])
    at_once = summary["at_once"]
    assert kinds == sorted([("barge_in", "with_echo"), ("barge_in", "without_echo"), ("echo", "off"), ("echo", "on"),
                            *[("at_once", None)] * at_once["sessions"]])
    assert at_once["sessions"] == 4 and at_once["answered"] <= 4  # the bench started its server with 4 units
    # a barge-in is timed to speech_started while the answer plays; one that played out first is counted apart
    barge, trials = summary["barge_in"], [s for s in result["samples"] if s["kind"] == "barge_in"]
    assert barge["played_out"] + barge["not_heard"] + barge["with_echo"]["n"] + barge["without_echo"]["n"] == 2
    [quiet] = [s for s in trials if s["echo"] == "without_echo"]
    assert quiet["played_out"] or (quiet["heard"] and quiet["speech_to_speech_started_ms"] > 0)
    # the server's canceller ran only for the sessions that asked for it, and /metrics says what it cost
    for cost in (summary["server_one_at_a_time"], at_once["server"]):
        assert cost["cancelled_audio_s"] > 0 and 0 < cost["cpu_s_per_audio_s"] < 1
    offline = summary["offline"]
    assert set(offline["erle_db"]) == {"150ms"} and offline["cpu_s_per_audio_s"] > 0
    assert offline["four_sessions_cpu_s_per_audio_s"] > offline["cpu_s_per_audio_s"]
