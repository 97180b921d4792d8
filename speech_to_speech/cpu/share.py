"""How many of this process's CPUs other processes leave free right now.

A matrix kernel split over two threads finishes only when both halves do. On a
2-core laptop with a browser tab keeping one core busy, the second thread of
llama.cpp waits for the scheduler to give it a turn on that core, at every
barrier of every layer of every token: a reply that takes 0.5 s on an idle
machine took 2-3 s. One thread on the free core takes ~1.7x the two-thread
time instead. So the multi-threaded stages ask, before each reply, how many
CPUs are free, and use no more threads than that.

What is free is measured, not guessed: a sampler thread reads the busy time of
the usable CPUs from ``/proc/stat`` and this process's own CPU time from
``/proc/self/stat`` a few times a second; what was busy and was not us is the
neighbours' load, averaged over the last second. Where the files cannot be
read (not Linux), every usable CPU counts as free.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from speech_to_speech.cpu import usable_cpu_count, usable_cpus

PROC_STAT = Path("/proc/stat")
OWN_STAT = Path("/proc/self/stat")
SAMPLE_S = 0.25
WINDOW_S = 1.0  # the neighbours' load is their average over this long
# A neighbour's load counts as a taken CPU from this much of one: a browser tab idling at 20 % leaves
# both cores to us, one spinning at 100 % (or two at 50 %) takes one.
TAKEN_FROM = 0.5
# /proc/stat's columns after the CPU's name: user nice system idle iowait irq softirq steal (guest time is
# inside user already). Steal is time the hypervisor gave another machine: not ours either.
IDLE_COLUMNS = (3, 4)
BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative clock ticks at one moment: busy on the usable CPUs, and this process's own."""

    at: float
    busy: int
    own: int


def read_times(cpus: set[int], stat: Path = PROC_STAT, own: Path = OWN_STAT,
               clock: Callable[[], float] = time.monotonic) -> CpuTimes | None:
    """The busy ticks of ``cpus`` and this process's user and system ticks; None where unreadable."""
    try:
        lines = stat.read_text().splitlines()
        own_fields = own.read_text().rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
    except (OSError, IndexError):
        return None
    busy = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            columns = [int(value) for value in rest.split()]
            busy += sum(columns[i] for i in BUSY_COLUMNS if i < len(columns))
    # After the ")": state is field 3 of stat(5), utime 14 and stime 15, so 11 and 12 here.
    return CpuTimes(clock(), busy, int(own_fields[11]) + int(own_fields[12]))


def neighbours_load(older: CpuTimes, newer: CpuTimes, ticks_per_s: float) -> float:
    """CPUs' worth of time others used between two readings (ours taken out; never below 0)."""
    seconds = newer.at - older.at
    if seconds <= 0:
        return 0.0
    others = (newer.busy - older.busy) - (newer.own - older.own)
    return max(0.0, others / ticks_per_s / seconds)


def free_of(load: float, cpus: int) -> int:
    """How many of ``cpus`` a neighbours' load of ``load`` CPUs leaves (at least one: we must run)."""
    taken = math.floor(load + 1 - TAKEN_FROM) if load >= TAKEN_FROM else 0
    return max(1, cpus - taken)


class CpuShare:
    """A sampler of the neighbours' load; :meth:`free_cpus` is what it leaves of the usable CPUs."""

    def __init__(self, read: Callable[[], CpuTimes | None], cpus: int, ticks_per_s: float,
                 window_s: float = WINDOW_S) -> None:
        self._read = read
        self.cpus = cpus
        self._ticks_per_s = ticks_per_s
        self._window_s = window_s
        self._samples: deque[CpuTimes] = deque()
        self._lock = threading.Lock()

    def sample(self) -> None:
        """Take a reading, and forget those older than the window needs."""
        now = self._read()
        if now is None:
            return
        with self._lock:
            self._samples.append(now)
            while len(self._samples) > 2 and now.at - self._samples[1].at >= self._window_s:
                self._samples.popleft()

    def load(self) -> float:
        """The neighbours' load over the window (0 until two readings exist)."""
        with self._lock:
            if len(self._samples) < 2:
                return 0.0
            return neighbours_load(self._samples[0], self._samples[-1], self._ticks_per_s)

    def free_cpus(self) -> int:
        return free_of(self.load(), self.cpus)


_shared: CpuShare | None = None
_shared_lock = threading.Lock()


def shared() -> CpuShare:
    """The process's one sampler, started by the first caller (a daemon thread, a few reads a second)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            cpus = usable_cpus()
            ticks = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0  # USER_HZ
            share = CpuShare(lambda: read_times(cpus), usable_cpu_count(), ticks)
            share.sample()
            threading.Thread(target=_keep_sampling, args=(share,), name="cpu-share", daemon=True).start()
            _shared = share
        return _shared


def _keep_sampling(share: CpuShare) -> None:
    while True:
        time.sleep(SAMPLE_S)
        share.sample()
