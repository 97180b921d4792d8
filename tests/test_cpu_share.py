"""What other processes leave of our CPUs: /proc readings (fake files and this machine's), the load over a
window, and the free count the multi-threaded stages size themselves by."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.cpu import share as cpu_share
from speech_to_speech.cpu import usable_cpus
from speech_to_speech.cpu.share import CpuShare, CpuTimes, free_of, neighbours_load, read_times

STAT = """cpu  900 0 300 5000 10 0 5 0 0 0
cpu0 400 0 100 2500 5 0 2 7 0 0
cpu1 500 0 200 2500 5 0 3 0 0 0
intr 12345
"""
OWN = "4242 (python3 -m my server) S 1 4242 4242 0 -1 4194560 100 0 0 0 55 11 0 0 20 0 9 0\n"


def test_the_busy_time_of_the_usable_cpus_and_our_own_are_read(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(STAT)
    (tmp_path / "own").write_text(OWN)
    both = read_times({0, 1}, tmp_path / "stat", tmp_path / "own", clock=lambda: 7.0)
    assert both == CpuTimes(7.0, busy=400 + 100 + 2 + 7 + 500 + 200 + 3, own=55 + 11)
    assert read_times({1}, tmp_path / "stat", tmp_path / "own", clock=lambda: 7.0) == CpuTimes(7.0, 703, 66)
    assert read_times({0}, tmp_path / "missing", tmp_path / "own") is None


def test_the_neighbours_load_is_the_busy_time_that_was_not_ours() -> None:
    before, after = CpuTimes(10.0, busy=1000, own=300), CpuTimes(11.0, busy=1150, own=330)
    assert neighbours_load(before, after, ticks_per_s=100) == pytest.approx(1.2)
    assert neighbours_load(before, CpuTimes(11.0, 1030, 330), 100) == 0.0  # all of it ours
    assert neighbours_load(before, before, 100) == 0.0


@pytest.mark.parametrize(("load", "free"), [(0.0, 2), (0.3, 2), (0.5, 1), (1.0, 1), (1.4, 1), (1.6, 1), (3.0, 1)])
def test_a_neighbour_takes_a_cpu_from_half_of_one(load: float, free: int) -> None:
    assert free_of(load, 2) == free


@given(st.floats(0, 64), st.floats(0, 64), st.integers(1, 64))
def test_more_load_never_leaves_more_cpus_and_one_always_remains(a: float, b: float, cpus: int) -> None:
    low, high = sorted((a, b))
    assert 1 <= free_of(high, cpus) <= free_of(low, cpus) <= cpus


def test_the_load_is_averaged_over_the_last_window() -> None:
    readings = iter([CpuTimes(0.0, 0, 0), CpuTimes(0.5, 50, 0), CpuTimes(1.0, 100, 0),  # a neighbour at 100 %
                     CpuTimes(1.5, 100, 0), CpuTimes(2.0, 100, 0), CpuTimes(2.5, 100, 0)])  # then gone
    share = CpuShare(lambda: next(readings), cpus=2, ticks_per_s=100, window_s=1.0)
    assert share.load() == 0.0 and share.free_cpus() == 2  # no reading yet
    for _ in range(3):
        share.sample()
    assert share.load() == pytest.approx(1.0) and share.free_cpus() == 1
    share.sample()
    share.sample()
    share.sample()
    assert share.load() == pytest.approx(0.0) and share.free_cpus() == 2  # its second is over


def test_unreadable_times_leave_every_cpu_free() -> None:
    share = CpuShare(lambda: None, cpus=4, ticks_per_s=100)
    share.sample()
    share.sample()
    assert share.free_cpus() == 4


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads Linux's /proc")
def test_a_process_spinning_beside_us_is_seen_as_a_neighbour() -> None:
    share = CpuShare(lambda: read_times(usable_cpus()), cpus=2, ticks_per_s=os.sysconf("SC_CLK_TCK"), window_s=10)
    spin = "import time\nend = time.time() + 3\nwhile time.time() < end: pass"
    spinner = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.3)  # past the interpreter's start
        share.sample()
        time.sleep(1.0)
        share.sample()
    finally:
        spinner.kill()
        spinner.wait()
    assert share.load() >= 0.6, share.load()  # one CPU's worth, less what others' scheduling took


def test_the_shared_sampler_is_one_per_process() -> None:
    first = cpu_share.shared()
    assert cpu_share.shared() is first and 1 <= first.free_cpus() <= first.cpus
