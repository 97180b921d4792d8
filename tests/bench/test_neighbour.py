"""The busy neighbour of bench load: it spins while its block runs, and is gone after, however it ends."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from speech_to_speech.bench.neighbour import busy_core, cpu_seconds

DEADLINE_S = 60.0  # how long a test waits for a process to go: a hang, not a speed


def gone(pid: int) -> bool:
    """No process ``pid``, or only its zombie (a parent that has not reaped it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_it_spins_in_its_block_and_is_killed_after() -> None:
    with busy_core(600.0) as neighbour:
        pid = neighbour.pid
        assert not gone(pid) and neighbour.process.poll() is None
        before = cpu_seconds(pid)
        assert before is not None
        deadline = time.monotonic() + DEADLINE_S
        while (cpu_seconds(pid) or 0.0) <= before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (cpu_seconds(pid) or 0.0) > before  # it computes
    assert gone(pid)
    report = neighbour.report
    assert report["pid"] == pid and report["ended_by_itself"] is False
    assert report["cpu_s"] is not None and report["cpu_s"] > 0
    assert report["busy_share"] is not None and report["busy_share"] > 0


def test_it_is_killed_when_its_block_fails() -> None:
    with pytest.raises(KeyError), busy_core(600.0) as neighbour:
        raise KeyError("the phase broke")
    assert gone(neighbour.pid) and neighbour.process.returncode is not None


def test_it_stops_by_itself_at_its_limit() -> None:
    with busy_core(0.2) as neighbour:
        neighbour.process.wait(timeout=DEADLINE_S)
    assert neighbour.process.returncode == 0  # it ended, not killed
    assert neighbour.report["ended_by_itself"] is True and neighbour.report["busy_share"] is None


def test_it_stops_when_whoever_started_it_is_gone() -> None:
    """A bench killed outright never reaches its ``finally``: the loop notices it has a new parent."""
    starter = ("from speech_to_speech.bench.neighbour import busy_core\n"
               "import os\n"
               "with busy_core(600.0) as n:\n"
               "    print(n.pid, flush=True)\n"
               "    os._exit(0)\n")
    # Its stdout only: the neighbour shares the starter's stderr, which run() would otherwise wait out.
    out = subprocess.run([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True, timeout=DEADLINE_S,
                         check=True)
    pid = int(out.stdout.split()[0])
    assert pid != os.getpid()
    assert wait_gone(pid)
