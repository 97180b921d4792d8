"""bench report: the README table, the markers it goes between, and the plot, from result files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.bench import echo_report, load, report
from speech_to_speech.bench.stats import summarize

ENVIRONMENT = {
    "cpu": "Test CPU", "cores": 2, "ram_gib": 24.0, "python": "3.11.7", "git": "abc1234",
    "packages": {"torch": "2.13.0", "onnxruntime": "1.32.0", "ctranslate2": None, "transformers": "5.0"},
    "server": {"models": {"vad": "scripted", "stt": "scripted", "llm": "scripted", "tts": "scripted"}},
}

Samples = Callable[..., list[dict[str, Any]]]  # the load_samples fixture


def result(name: str, summary: dict[str, Any], samples: list[dict[str, Any]]) -> dict[str, Any]:
    return {"benchmark": name, "command": f"speech-to-speech bench {name} --llm scripted", "summary": summary,
            "environment": ENVIRONMENT, "samples": samples, "config": {}}


def results() -> dict[str, dict[str, Any]]:
    latency = [{"end_of_speech_to_first_audio_ms": v, "stt_ms": v / 10} for v in (900.0, 1000.0, 1100.0)]
    capacity_level = {name: summarize([1.0, 3.0]) for name in
                      ("end_of_speech_to_first_audio_ms", "added_latency_ms", "underrun_ms", "underruns")}
    return {
        "latency": result("latency", {
            "end_of_speech_to_first_audio_ms": summarize(s["end_of_speech_to_first_audio_ms"] for s in latency),
            "stt_ms": summarize(s["stt_ms"] for s in latency)}, latency),
        "bargein": result("bargein", {"speech_to_cancelled_ms": summarize([300.0]), "missed": 1, "trials": 2,
                                      "min_speech_ms": 250}, [{"speech_to_cancelled_ms": 300.0}]),
        "capacity": result("capacity", {"sessions": {"1": {**capacity_level, "errors": 0},
                                                     "2": {**capacity_level, "errors": 1}},
                                        "baseline_ms": 600.0, "budget_ms": 50.0,
                                        "max_sessions_within_budget": 1}, []),
    }


def test_the_table_has_every_figure_the_machine_and_the_commands() -> None:
    text = report.markdown(results(), "docs/benchmarks/benchmarks.png")
    assert "Test CPU, 2 cores, 24.0 GiB RAM" in text and "torch 2.13.0" in text and "ctranslate2" not in text
    assert "| **latency** | end of speech → first audio delta | 1000 | 1090 | 3 |" in text
    assert "|  | · → STT done | 100 | 109 | 3 |" in text
    assert "| **bargein** | start of speech → response cancelled | 300 | 300 | 1 |" in text
    assert "trials missed (the answer ended first) | 1 of 2" in text
    assert "Models: latency: scripted; bargein: scripted;" in text
    assert "**1** concurrent sessions" in text
    assert "| 2 | 2.0 | 2.9 | 2.0 | 2.9 | 2.9 | 1 |" in text
    assert "![benchmark plot](docs/benchmarks/benchmarks.png)" in text
    assert "speech-to-speech bench capacity --llm scripted" in text and "speech-to-speech bench report" in text


def test_results_from_different_machines_say_which_came_from_which() -> None:
    found = results()
    assert "Measured on" not in report.machine_line(found)  # one machine: the line says it once
    found["bargein"] = {**found["bargein"], "environment": {**ENVIRONMENT, "cpu": "Other CPU"}}
    line = report.machine_line(found)
    assert line.startswith("Machine: Test CPU, 2 cores")
    assert line.endswith(" Measured on Test CPU: latency, capacity; Other CPU: bargein.")


def test_no_results_say_how_to_get_them() -> None:
    assert "speech-to-speech bench" in report.markdown({})


def test_the_section_replaces_only_what_is_between_the_markers() -> None:
    readme = f"# Title\n\n{report.START}\nold table\n{report.END}\n\nmore\n"
    updated = report.replace_section(readme, "new table\n")
    assert updated == f"# Title\n\n{report.START}\nnew table\n{report.END}\n\nmore\n"
    assert report.replace_section(updated, "new table\n") == updated  # idempotent
    with pytest.raises(ValueError, match="markers"):
        report.replace_section("# no markers\n", "table")


def test_report_writes_the_plot_and_the_readme_section(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    folder = tmp_path / "docs" / "benchmarks"
    folder.mkdir(parents=True)
    for name, content in results().items():
        (folder / f"{name}.json").write_text(json.dumps(content))
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{report.START}\n{report.END}\n")
    assert report.run_report(folder, None, readme) == 0
    png = folder / report.PLOT_NAME
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = readme.read_text()
    assert "![benchmark plot](docs/benchmarks/benchmarks.png)" in text and text.startswith("intro\n")


def test_report_without_results_or_markers_fails_cleanly(tmp_path: Path, capsys: Any) -> None:
    assert report.run_report(tmp_path, None, None) == 1
    assert "no benchmark results" in capsys.readouterr().err
    pytest.importorskip("matplotlib")
    (tmp_path / "latency.json").write_text(json.dumps(results()["latency"]))
    (tmp_path / "README.md").write_text("no markers here\n")
    assert report.run_report(tmp_path, None, tmp_path / "README.md") == 1
    assert "markers" in capsys.readouterr().err


def turns_result(not_completed: dict[str, int]) -> dict[str, Any]:
    return result("turns", {"end_of_speech_to_first_audio_ms": summarize([600.0, 700.0]), "requests": 3,
                            "answered": 2, "answered_rate": 0.667, "double_answers": 1, "errors": 0,
                            "unanswered": ["knight_story (repeat 0)"], "not_completed": not_completed}, [])


def test_turns_show_answered_requests_and_double_answers_under_their_latency() -> None:
    found = {**results(), "turns": turns_result({"cancelled: turn_detected": 2})}
    text = report.markdown({name: found[name] for name in report.ORDER if name in found})  # as load_results reads
    lines = text.splitlines()
    start = lines.index("| **turns** | end of speech → first audio delta | 650 | 695 | 2 |")
    assert lines[start + 1:start + 4] == [
        "| | requests answered | 2 of 3 | | |",
        "| | double answers (two responses with audio) | 1 | | |",
        "| | responses not completed | cancelled: turn_detected ×2 | | |",
    ]
    assert lines[start + 4].startswith("| **bargein**")  # turns sit between latency and bargein
    assert "responses not completed" not in report.markdown({"turns": turns_result({})})
    assert "turn ends by detector outcome" not in text  # a run that recorded no decisions shows no row


def test_turns_show_how_the_turn_detector_ended_the_turns() -> None:
    found = turns_result({})
    found["summary"]["turn_outcomes"] = {"finished": 30, "timed_out": 2}
    lines = report.markdown({"turns": found}).splitlines()
    assert "| | turn ends by detector outcome | finished ×30, timed_out ×2 | | |" in lines


def test_load_rows_sit_after_turns_in_the_table() -> None:
    latency = summarize([500.0, 600.0])
    turns_summary = {"end_of_speech_to_first_audio_ms": latency, "requests": 2, "answered": 2, "not_completed": {}}
    phases = {"alone": {**turns_summary}, "two_at_once": {**turns_summary, "slower_of_pair_ms": summarize([600.0])}}
    load = result("load", {"phases": phases, "alone_p50_ms": 550.0, "busy_neighbour_ratio": None,
                           "two_at_once_ratio": 1.0, "two_at_once_slowest_ratio": 1.091,
                           "two_at_once_slowest_max_ratio": 1.091, "requests": 4, "answered": 4,
                           "all_answered": True}, [])
    found = {**results(), "turns": turns_result({}), "load": load}
    text = report.markdown({name: found[name] for name in report.ORDER if name in found})
    lines = text.splitlines()
    start = lines.index("| **load** | end of speech → first audio delta, alone | 550 | 595 | 2 |")
    assert lines[start - 1] == "| | double answers (two responses with audio) | 1 | | |"  # the last turns row
    assert lines[start + 1:start + 5] == [
        "|  | · two sessions speaking at the same moment (×1.00) | 550 | 595 | 2 |",
        "|  | · the slower answer of each pair (×1.09; the slowest ×1.09) | 600 | 600 | 1 |",
        "| | requests answered (alone / two at once) | 2 of 2 / 2 of 2 | | |",
        "| **bargein** | start of speech → response cancelled | 300 | 300 | 1 |",
    ]
    assert "load: scripted" in text and "speech-to-speech bench load --llm scripted" in text


def test_a_load_result_prints_its_rows(capsys: pytest.CaptureFixture[str]) -> None:
    phases = {"alone": {"end_of_speech_to_first_audio_ms": summarize([500.0]), "requests": 1, "answered": 0,
                        "not_completed": {"failed: boom": 1}}}
    report.print_summary(result("load", {"phases": phases, "busy_neighbour_ratio": None}, []))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| benchmark | figure | p50 (ms) | p95 (ms) | n |"
    assert out[1:] == ["| **load** | end of speech → first audio delta, alone | 500 | 500 | 1 |",
                       "| | requests answered (alone) | 0 of 1 | | |",
                       "| | responses not completed | alone: failed: boom ×1 | | |"]


def test_the_readme_rows_show_each_phase_its_ratio_and_the_answers(load_samples: Samples) -> None:
    summary = load.summarize_load(load_samples(unanswered=True), {"busy_share": 0.97})
    assert report.load_rows(summary) == [
        "| **load** | end of speech → first audio delta, alone | 500 | 585 | 4 |",
        "|  | · beside a process spinning on one core (×1.50; it ran 0.97 of a core) | 750 | 885 | 4 |",
        "|  | · two sessions speaking at the same moment (×1.30) | 650 | 695 | 3 |",
        "|  | · the slower answer of each pair (×1.30; the slowest ×1.30) | 650 | 650 | 1 |",
        "| | requests answered (alone / busy neighbour / two at once) | 4 of 4 / 4 of 4 / 3 of 4 | | |",
        "| | responses not completed | two at once: cancelled: turn_detected ×1 | | |",
    ]


def echo_summary(barge_with: list[float], barge_without: list[float]) -> dict[str, Any]:
    mode = {"trials": 15, "answered": 15, "self_interruptions": 0, "runs_with_self_interruption": 0,
            "echo_turns": 0, "extra_responses": 0}
    return {"off": {**mode, "answered": 4, "runs_with_self_interruption": 15, "echo_turns": 44},
            "on": {**mode, "runs_with_self_interruption": 1},
            "barge_in": {"with_echo": summarize(barge_with), "without_echo": summarize(barge_without), "played_out": 0,
                         "not_heard": 0},
            "offline": {"audio_s": 9.0, "erle_db": {"60ms": 38.4, "250ms": 40.6}, "cpu_s_per_audio_s": 0.0123,
                        "four_sessions_cpu_s_per_audio_s": 0.051},
            "server_one_at_a_time": {"cpu_s_per_audio_s": 0.0141, "share_of_a_core": 0.007},
            "at_once": {"sessions": 4, "answered": 4, "runs_with_self_interruption": 1, "echo_turns": 0,
                        "server": {"cpu_s_per_audio_s": 0.0152, "share_of_a_core": 0.061}}}


def test_echo_rows_sit_after_bargein_with_both_barge_ins_and_both_modes() -> None:
    found = {**results(), "echo": result("echo", echo_summary([600.0, 700.0], [650.0]), [])}
    lines = report.markdown({name: found[name] for name in report.ORDER if name in found}).splitlines()
    start = lines.index("| **echo** | start of speech over the echo → speech_started (cancellation on) "
                        "| 650 | 695 | 2 |")
    assert lines[start - 1] == "| | trials missed (the answer ended first) | 1 of 2 | | |"  # the last bargein row
    assert lines[start + 1:start + 10] == [
        "|  | · the same without the echo | 650 | 650 | 1 |",
        "| | barge-in trials: the answer played out first / not heard | 0 / 0 | | |",
        "| | answers played out (cancellation off / on) | 4 of 15 / 15 of 15 | | |",
        "| | runs that interrupted themselves (off / on) | 15 / 1 | | |",
        "| | the assistant's words heard as the user's, turns (off / on) | 44 / 0 | | |",
        "| | 4 sessions at once, cancellation on: answers played out / runs that interrupted themselves "
        "| 4 of 4 / 1 | | |",
        "| | server's canceller CPU per second of audio, one session / 4 at once | 1.4% / 1.5% "
        "(6.1% of a core in all) | | |",
        "| | echo removed offline (ERLE) | 60ms late 38 dB, 250ms late 41 dB | | |",
        "| | canceller CPU, one session / four | 1.2% / 5.1% of a core | | |",
    ]


def test_an_echo_result_without_barge_ins_prints_its_counts(capsys: pytest.CaptureFixture[str]) -> None:
    summary = {**echo_summary([], []), "offline": {}, "at_once": None, "server_one_at_a_time": None}
    report.print_summary(result("echo", summary, []))
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "| | barge-in trials: the answer played out first / not heard | 0 / 0 | | |"
    assert out[2] == "| | answers played out (cancellation off / on) | 4 of 15 / 15 of 15 | | |"
    assert len(out) == 5 and not any("cancelled" in line for line in out)


def test_an_echo_result_timed_to_the_cancellation_keeps_its_label() -> None:
    summary = echo_summary([600.0], [650.0])
    del summary["barge_in"]["played_out"], summary["barge_in"]["not_heard"]
    assert next(iter(echo_report.echo_figures(summary))) == (
        "start of speech over the echo → response cancelled (cancellation on)")
    assert not any("barge-in trials" in row for row in echo_report.echo_counts(summary))
