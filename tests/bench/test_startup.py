"""bench startup: the per-unit summary, the cost of one more unit, its report rows, and a tiny scripted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.bench import report, startup
from speech_to_speech.bench.startup import StartupConfig, extra_unit_mb, summarize_runs, tree_pss_mb, tree_rss_mb
from speech_to_speech.config import ServerSettings

from .test_cli_smoke import SCRIPTED, assert_common_shape, run
from .test_report import ENVIRONMENT


def sample(units: int, ready_ms: float, ready_mb: float, idle_mb: float, errors: int = 0) -> dict[str, Any]:
    return {"units": units, "ready_ms": ready_ms, "rss_ready_mb": ready_mb, "rss_idle_mb": idle_mb,
            "errors": errors, "turns": []}


def test_the_summary_has_every_figure_per_unit_count_and_the_cost_of_a_unit() -> None:
    samples = [sample(1, 4000.0, 500.0, 600.0), sample(4, 5000.0, 700.0, 900.0, errors=1),
               sample(1, 4200.0, 510.0, 620.0), sample(4, 5400.0, 720.0, 960.0)]
    summary = summarize_runs(samples)
    assert list(summary["units"]) == ["1", "4"]
    one, four = summary["units"]["1"], summary["units"]["4"]
    assert one["ready_ms"]["p50"] == 4100.0 and one["ready_ms"]["n"] == 2 and one["ready_ms"]["max"] == 4200.0
    assert one["rss_ready_mb"]["p50"] == 505.0 and one["rss_idle_mb"]["p50"] == 610.0
    assert (one["errors"], four["errors"]) == (0, 1)
    assert four["rss_idle_mb"]["p95"] == 957.0
    assert summary["extra_unit_mb"] == 106.7  # (930 - 610) / (4 - 1), from the medians


def test_the_extra_unit_needs_two_measured_unit_counts() -> None:
    def level(idle_p50: float | None) -> dict[str, Any]:
        return {"rss_idle_mb": {"p50": idle_p50}}

    assert extra_unit_mb({2: level(700.0), 4: level(900.0), 3: level(10_000.0)}) == 100.0  # smallest to largest
    assert extra_unit_mb({1: level(600.0)}) is None
    assert extra_unit_mb({1: level(600.0), 2: level(None)}) is None
    assert extra_unit_mb({1: level(600.0), 2: level(590.0)}) == -10.0  # reported as measured, not clamped


# A child that maps one 48 MiB file twice, reads every page of both mappings, and says so.
MAPS_A_FILE_TWICE = """
import mmap, sys, tempfile, time
with tempfile.TemporaryFile() as f:
    f.write(bytes(48 * 2**20)); f.flush()
    maps = [mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) for _ in range(2)]
    sum(m[i] for m in maps for i in range(0, len(m), 4096))
    print("mapped", flush=True); time.sleep(30)
"""


def test_pss_counts_a_file_mapped_twice_once_where_rss_counts_it_twice() -> None:
    """What a second llama.cpp context on the same GGUF looks like to the two figures."""
    pytest.importorskip("psutil")
    child = subprocess.Popen([sys.executable, "-c", MAPS_A_FILE_TWICE], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "mapped"
        rss, pss = tree_rss_mb(child.pid), tree_pss_mb(child.pid)
        if pss is None:
            pytest.skip("this OS reports no PSS")
        assert rss >= 96  # both mappings, each counted in full
        assert pss <= rss - 40, (rss, pss)  # the file once
    finally:
        child.kill()
        child.wait()


def test_memory_is_the_whole_process_tree() -> None:
    pytest.importorskip("psutil")
    alone = tree_rss_mb(os.getpid())
    # 64 MiB the child writes (bytearray zero-fills), so they are resident.
    child = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(64 * 2**20); time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while tree_rss_mb(child.pid) < 64 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tree_rss_mb(os.getpid()) >= alone + 64
    finally:
        child.kill()
        child.wait()


def test_without_psutil_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil raises ImportError
    with pytest.raises(RuntimeError, match=r"speech-to-speech\[bench\]"):
        startup.run(ServerSettings.model_validate({"llm": "scripted"}), StartupConfig(units=(1,), repeat=1))


def startup_result() -> dict[str, Any]:
    samples = [sample(1, 3900.0, 480.0, 612.0), sample(2, 4150.0, 560.0, 700.0, errors=2)]
    return {"benchmark": "startup", "command": "speech-to-speech bench startup --units 1,2",
            "summary": summarize_runs(samples), "environment": ENVIRONMENT, "samples": samples, "config": {}}


def test_the_report_shows_ready_time_idle_memory_and_the_extra_unit() -> None:
    text = report.markdown({"startup": startup_result()})
    assert "each extra pipeline unit adds **88.0 MB**" in text
    assert report.STARTUP_HEADER in text
    assert "| 1 | 3900 | 3900 | 480 | 612 | 612 | 0 |" in text
    assert "| 2 | 4150 | 4150 | 560 | 700 | 700 | 2 |" in text
    assert "| **startup**" not in text  # its own table, not the figure rows
    assert "speech-to-speech bench startup --units 1,2" in text


def test_the_report_loads_startup_beside_the_others(tmp_path: Path) -> None:
    (tmp_path / "startup.json").write_text(json.dumps(startup_result()))
    assert list(report.load_results(tmp_path)) == ["startup"]


def test_the_terminal_summary_has_the_rows_and_the_extra_unit(capsys: pytest.CaptureFixture[str]) -> None:
    report.print_summary(startup_result())
    out = capsys.readouterr().out
    assert out.startswith(report.STARTUP_HEADER)
    assert "| 2 | 4150 | 4150 | 560 | 700 | 700 | 2 |" in out
    assert "each extra pipeline unit adds 88.0 MB" in out


def test_bench_startup_starts_a_server_per_unit_count_and_measures_it(questions: Path, tmp_path: Path) -> None:
    pytest.importorskip("psutil")
    result = run(["bench", "startup", *SCRIPTED, "--questions-dir", str(questions), "--units", "1,2",
                  "--repeat", "1", "--settle-s", "0.2"], tmp_path / "startup.json")
    assert_common_shape(result, "startup")
    summary = result["summary"]
    assert set(summary["units"]) == {"1", "2"}
    for stats in summary["units"].values():
        assert stats["errors"] == 0
        for figure in startup.FIGURES:
            assert stats[figure]["n"] == 1 and stats[figure]["p50"] > 0
    assert isinstance(summary["extra_unit_mb"], float)
    assert [(s["units"], len(s["turns"])) for s in result["samples"]] == [(1, 1), (2, 2)]
    for run_sample in result["samples"]:
        assert run_sample["rss_ready_mb"] > 20  # a Python server with its app imported, not a stray number
        assert all(turn["status"] == "completed" and turn["reply"] for turn in run_sample["turns"])
    config = result["config"]
    assert (config["units"], config["repeat"], config["questions"]) == ([1, 2], 1, ["q1.wav"])
    assert config["serve"]["llm"] == "scripted" and "num_pipelines" not in config["serve"]
    assert result["environment"]["server"]["started_by_bench"] == "subprocess"
    assert "num_pipelines" not in result["environment"]["server"]["flags"]


def test_bench_startup_rejects_bad_unit_counts(capsys: pytest.CaptureFixture[str]) -> None:
    from speech_to_speech import cli

    with pytest.raises(SystemExit):
        cli.main(["bench", "startup", "--units", "0,2"])
    assert "positive" in capsys.readouterr().err
