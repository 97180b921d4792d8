"""How many pipeline units ``--num_pipelines auto`` (``serve``'s default) builds, and why.

A unit is one session's place: its stage threads, queues and buffers, and a
share of the models' weights, which are loaded once for all units. A session
costs CPU only while its user speaks and its answer is made, so the count
follows how many people talk within the latency target, not how many
could sit idle. ``bench capacity`` with the default models on 2 cores
(docs/benchmarks) measured four sessions whose starts were a second apart
at 1.27× one session's end of speech → first audio. Four whose speech
ended at the same instant came out at 2.5× and were all answered, but
with stutters. Memory caps it where a unit would not fit
beside what the machine has free: the models' own memory is counted once,
each unit's on top.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from speech_to_speech.cpu import cgroup_v2_folders, usable_cpu_count

AUTO: Literal["auto"] = "auto"
UNITS_PER_CPU = 2
MAX_AUTO_UNITS = 16  # a bound for large hosts: past it, scale out to more servers (or say a number)
# Measured with the default (quality) stack, resident memory after one answered turn per unit
# (`serve --num_pipelines N`, N = 1 and 4): the models and the first unit, then each further unit.
MODELS_BYTES = 1_200 * 2**20
UNIT_BYTES = 160 * 2**20
MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True)
class PoolSize:
    units: int
    reason: str  # one line for the startup log and GET /v1/pool


def _cgroup_room(folder: Path) -> int | None:
    try:
        limit = (folder / "memory.max").read_text().strip()
        return None if limit == "max" else int(limit) - int((folder / "memory.current").read_text())
    except (OSError, ValueError):
        return None


def available_memory(meminfo: Path = MEMINFO, folders: list[Path] | None = None) -> int | None:
    """Bytes this process could still take: the kernel's MemAvailable, capped by its cgroups' limits."""
    found: list[int | None] = []
    with contextlib.suppress(OSError, ValueError, IndexError):
        found += [int(line.split()[1]) * 1024 for line in meminfo.read_text().splitlines()
                  if line.startswith("MemAvailable:")]
    found += [_cgroup_room(folder) for folder in (cgroup_v2_folders() if folders is None else folders)]
    known = [room for room in found if room is not None]
    return max(0, min(known)) if known else None


def auto_size(cpus: int, memory: int | None) -> PoolSize:
    """The unit count for ``cpus`` usable CPUs and ``memory`` free bytes (None: unknown, not a cap)."""
    by_cpu = UNITS_PER_CPU * max(1, cpus)
    parts = [f"{UNITS_PER_CPU} per usable CPU ({cpus}) = {by_cpu}"]
    units = min(by_cpu, MAX_AUTO_UNITS)
    if by_cpu > MAX_AUTO_UNITS:
        parts.append(f"at most {MAX_AUTO_UNITS} without a number")
    if memory is not None:
        by_memory = max(1, (memory - MODELS_BYTES) // UNIT_BYTES)
        parts.append(f"memory for {by_memory} ({memory / 2**30:.1f} GiB free, "
                     f"~{UNIT_BYTES // 2**20} MB a unit after ~{MODELS_BYTES // 2**20} MB of models)")
        units = min(units, by_memory)
    return PoolSize(units, f"auto: {units} unit(s); " + ", ".join(parts))


def pool_size(requested: int | Literal["auto"]) -> PoolSize:
    """``--num_pipelines`` made a number: as given, or sized for this machine."""
    if requested == AUTO:
        return auto_size(usable_cpu_count(), available_memory())
    return PoolSize(requested, f"{requested} unit(s), as --num_pipelines says")
