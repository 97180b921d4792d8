"""How many threads a local model gets: the CPUs this process may use, logical told apart from physical.

The CPUs are those of the process's affinity, capped by its cgroup's CPU
quota (a container given "2 CPUs" on a 64-core host sees 64 in
``os.cpu_count()``, and 64 threads there only queue for their quota). On a
machine whose CPUs are hyperthreads of fewer cores, two threads of one matrix
kernel on one core only wait for each other; on a machine whose CPUs are
cores of their own, the second thread nearly halves the time of
compute-bound work such as reading a prompt. The default of each backend is
chosen by which it is: see ``llm/llama_cpp_lm.py``. How many of them other
processes leave free right now is ``cpu/share.py``'s question.
"""

from __future__ import annotations

import os
from pathlib import Path

SYS_CPU = Path("/sys/devices/system/cpu")
CGROUP = Path("/sys/fs/cgroup")
MEMBERSHIP = Path("/proc/self/cgroup")


def usable_cpus() -> set[int]:
    """The logical CPUs this process may run on."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return set(range(os.cpu_count() or 1))


def _v2_quota(folder: Path) -> float | None:
    try:
        quota, period = (folder / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def _v1_quota(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


def _memberships(membership: Path) -> list[tuple[str, Path]]:
    """The process's cgroups as (controllers, path below the hierarchy's root); none where unreadable."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            found.append((parts[1], Path(parts[2].lstrip("/"))))
    return found


def cgroup_v2_folders(root: Path = CGROUP, membership: Path = MEMBERSHIP) -> list[Path]:
    """The folders of the process's cgroup v2 group and of each group above it (a limit may sit in any)."""
    return [folder for controllers, relative in _memberships(membership) if not controllers
            for folder in (root / relative, *(root / parent for parent in relative.parents))]


def cgroup_cpu_limit(root: Path = CGROUP, membership: Path = MEMBERSHIP) -> float | None:
    """The CPUs' worth of time a second the process's cgroups allow it (the tightest of them), or None.

    cgroup v2 (a ``0::/path`` line) writes the quota in ``cpu.max`` of the group and of each group
    above it; v1 in ``cpu.cfs_quota_us`` of the cpu controller's hierarchy.
    """
    limits: list[float | None] = [_v2_quota(folder) for folder in cgroup_v2_folders(root, membership)]
    for controllers, relative in _memberships(membership):
        if controllers and "cpu" in controllers.split(","):
            limits.extend(_v1_quota(root / mount / relative) for mount in {controllers, "cpu", "cpu,cpuacct"})
    known = [limit for limit in limits if limit is not None]
    return min(known) if known else None


def usable_cpu_count() -> int:
    """How many CPUs' worth this process may run on at once: its affinity, capped by its cgroup quota."""
    cpus = len(usable_cpus())
    limit = cgroup_cpu_limit()
    return max(1, cpus if limit is None else min(cpus, int(limit)))  # 1.5 CPUs of quota: one thread, unthrottled


def half_the_cpus() -> int:
    """Half the usable CPUs (at least one): the physical cores of a machine with two threads per core."""
    return max(1, usable_cpu_count() // 2)


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
    return max(1, min(len(cores), usable_cpu_count()))


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
