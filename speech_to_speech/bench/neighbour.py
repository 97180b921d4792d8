"""A process that keeps one core busy beside the server: the ``busy_neighbour`` phase of ``bench load``.

What a voice server on a small machine lives with: another program
computing. The neighbour is a plain Python loop in a child process (one
thread, so at most one core's worth), started by :func:`busy_core` and
killed when its block ends, however the block ends. Should this process die
without killing it, the loop stops by itself: at its own time limit, or as
soon as its parent is no longer the process that started it.

What it did is reported, so a reader can tell a neighbour that spun the
whole phase from one that was starved or ended early: its CPU seconds over
the wall seconds it ran (``busy_share``: 1.0 is one core kept busy).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

READY = "spinning"  # the line the child prints once its loop is about to start
# argv: time limit (s), the pid of the process that started it. Between two looks at the clock and the
# parent it counts, a few ms of pure interpretation: user time, as a computing neighbour's is.
SPIN = f"""
import os, sys, time
limit, parent = float(sys.argv[1]), int(sys.argv[2])
end = time.monotonic() + limit
print({READY!r}, flush=True)
while time.monotonic() < end and os.getppid() == parent:
    for _ in range(100_000):
        pass
"""
KILL_WAIT_S = 10.0


@dataclass
class Neighbour:
    """The spinning child, and what it did once its block is over (``report``)."""

    process: subprocess.Popen[str]
    limit_s: float
    started: float  # monotonic
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far, from ``/proc`` (None where it cannot be read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state is field 3, utime 14, stime 15
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def busy_core(limit_s: float) -> Iterator[Neighbour]:
    """A child spinning on one core for the block (and at most ``limit_s``); killed and reaped after it."""
    process = subprocess.Popen([sys.executable, "-c", SPIN, str(limit_s), str(os.getpid())],
                               stdout=subprocess.PIPE, text=True)
    neighbour = Neighbour(process, limit_s, time.monotonic())
    try:
        assert process.stdout is not None
        if process.stdout.readline().strip() != READY:
            raise RuntimeError(f"the busy neighbour did not start (exit code {process.poll()})")
        process.stdout.close()
        yield neighbour
    finally:
        ended_by_itself = process.poll() is not None
        cpu, wall = cpu_seconds(process.pid), time.monotonic() - neighbour.started
        process.kill()
        try:
            process.wait(timeout=KILL_WAIT_S)
        finally:
            if process.stdout is not None:
                process.stdout.close()
        neighbour.report = {
            "pid": process.pid,
            "limit_s": round(limit_s, 1),
            "wall_s": round(wall, 2),
            "cpu_s": None if cpu is None else round(cpu, 2),
            "busy_share": None if cpu is None or ended_by_itself else round(cpu / wall, 3),
            # True: it was gone before the phase ended (its limit, or it failed), so the phase was not all busy.
            "ended_by_itself": ended_by_itself,
        }
