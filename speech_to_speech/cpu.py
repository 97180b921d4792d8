"""How many threads a local model gets: logical CPUs told apart from physical cores.

On a machine whose CPUs are hyperthreads of fewer cores, two threads of one
matrix kernel on one core only wait for each other; on a machine whose CPUs
are cores of their own, the second thread nearly halves the time of
compute-bound work such as reading a prompt. The default of each backend is
chosen by which it is: see ``llm/llama_cpp_lm.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

SYS_CPU = Path("/sys/devices/system/cpu")


def usable_cpus() -> set[int]:
    """The logical CPUs this process may run on."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return set(range(os.cpu_count() or 1))


def half_the_cpus() -> int:
    """Half the logical CPUs (at least one): the physical cores of a machine with two threads per core."""
    return max(1, (os.cpu_count() or 2) // 2)


def physical_cores(root: Path = SYS_CPU) -> int:
    """The physical cores among the usable CPUs, read from Linux's CPU topology.

    Where the topology cannot be read (macOS, a container without /sys), it
    is half the logical CPUs, the count for the common two threads per core.
    """
    cores: set[tuple[str, str]] = set()
    for cpu in usable_cpus():
        topology = root / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            return half_the_cpus()
        cores.add((package, core))
    return max(1, len(cores))


# Instruction sets that the models' int8 and float kernels choose their code by: two CPUs that both
# call themselves "AMD EPYC" ran every stage of a turn at speeds twice apart (docs/benchmarks).
KERNEL_FEATURES = ("avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8")


def cpu_features(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str] | None:
    """Which of :data:`KERNEL_FEATURES` the CPU has, from Linux's cpuinfo; None where it cannot be read."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return [name for name in KERNEL_FEATURES if name in flags]
    return None
