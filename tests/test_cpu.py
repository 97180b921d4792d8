"""Counting the CPUs a process may use: physical cores from a CPU topology (a fake sysfs tree), the fallback
without one, and the cgroup CPU quota (fake cgroup trees of both versions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from speech_to_speech import cpu

read_limit = cpu.cgroup_cpu_limit  # the real reader, for the tests of it


@pytest.fixture(autouse=True)
def no_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    """The topology tests count CPUs alone, whatever cgroup this test run happens to be in."""
    monkeypatch.setattr(cpu, "cgroup_cpu_limit", lambda: None)


def topology(root: Path, cores: dict[int, tuple[int, int]]) -> Path:
    """A /sys/devices/system/cpu look-alike: logical CPU -> (package, core)."""
    for logical, (package, core) in cores.items():
        folder = root / f"cpu{logical}" / "topology"
        folder.mkdir(parents=True)
        (folder / "physical_package_id").write_text(f"{package}\n")
        (folder / "core_id").write_text(f"{core}\n")
    return root


def test_hyperthreads_of_one_core_count_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "usable_cpus", lambda: {0, 1, 2, 3})
    root = topology(tmp_path, {0: (0, 0), 1: (0, 0), 2: (0, 1), 3: (0, 1)})
    assert cpu.physical_cores(root) == 2


def test_cores_of_their_own_count_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "usable_cpus", lambda: {0, 1})
    root = topology(tmp_path, {0: (0, 0), 1: (0, 1)})
    assert cpu.physical_cores(root) == 2


def test_the_same_core_id_in_two_packages_is_two_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "usable_cpus", lambda: {0, 1})
    root = topology(tmp_path, {0: (0, 0), 1: (1, 0)})
    assert cpu.physical_cores(root) == 2


def test_only_the_cpus_the_process_may_use_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "usable_cpus", lambda: {2})
    root = topology(tmp_path, {0: (0, 0), 1: (0, 1), 2: (0, 2), 3: (0, 3)})
    assert cpu.physical_cores(root) == 1


def test_without_a_topology_it_is_half_the_cpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "usable_cpus", lambda: {0, 1, 2, 3, 4, 5})
    monkeypatch.setattr(cpu.os, "cpu_count", lambda: 6)
    assert cpu.physical_cores(tmp_path / "missing") == 3


def test_this_machine_has_at_least_one_core_and_no_more_than_its_cpus() -> None:
    assert 1 <= cpu.physical_cores() <= cpu.usable_cpu_count() <= len(cpu.usable_cpus())


def cgroup_files(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_cgroup_v2_quota_is_the_tightest_on_the_way_up(tmp_path: Path) -> None:
    root = cgroup_files(tmp_path / "fs", {"cpu.max": "max 100000\n", "app/cpu.max": "300000 100000\n",
                                          "app/worker/cpu.max": "150000 100000\n"})
    membership = cgroup_files(tmp_path, {"cgroup": "0::/app/worker\n"}) / "cgroup"
    assert read_limit(root, membership) == pytest.approx(1.5)


def test_no_quota_is_no_limit(tmp_path: Path) -> None:
    root = cgroup_files(tmp_path / "fs", {"cpu.max": "max 100000\n", "cpu/cpu.cfs_quota_us": "-1\n",
                                          "cpu/cpu.cfs_period_us": "100000\n"})
    membership = cgroup_files(tmp_path, {"cgroup": "1:cpu:/\n2:cpuacct:/\n0::/\n"}) / "cgroup"
    assert read_limit(root, membership) is None
    assert read_limit(root, tmp_path / "no-such-file") is None


def test_a_cgroup_v1_quota_is_read_from_the_cpu_hierarchy(tmp_path: Path) -> None:
    root = cgroup_files(tmp_path / "fs", {"cpu,cpuacct/job/cpu.cfs_quota_us": "50000\n",
                                          "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n"})
    membership = cgroup_files(tmp_path, {"cgroup": "4:memory:/job\n3:cpu,cpuacct:/job\n"}) / "cgroup"
    assert read_limit(root, membership) == pytest.approx(0.5)


@pytest.mark.parametrize(("cpus", "limit", "usable"), [
    (8, None, 8), (8, 2.0, 2), (8, 1.5, 1), (8, 0.5, 1), (2, 4.0, 2),
])
def test_the_usable_count_is_the_affinity_capped_by_the_quota(
    monkeypatch: pytest.MonkeyPatch, cpus: int, limit: float | None, usable: int
) -> None:
    monkeypatch.setattr(cpu, "usable_cpus", lambda: set(range(cpus)))
    monkeypatch.setattr(cpu, "cgroup_cpu_limit", lambda: limit)
    assert cpu.usable_cpu_count() == usable
    assert cpu.half_the_cpus() == max(1, usable // 2)


def test_the_kernel_features_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma f16c bmi2\n\n"
                       "processor\t: 1\nflags\t\t: fpu sse2 avx avx2 fma f16c bmi2\n")
    assert cpu.cpu_features(cpuinfo) == ["avx2", "fma", "f16c"]
    cpuinfo.write_text("flags\t: avx2 fma avx512f avx512_vnni amx_int8 amx_tile\n")
    assert cpu.cpu_features(cpuinfo) == ["avx2", "fma", "avx512f", "avx512_vnni", "amx_int8"]


def test_without_cpuinfo_the_features_are_unknown(tmp_path: Path) -> None:
    assert cpu.cpu_features(tmp_path / "missing") is None
    (tmp_path / "empty").write_text("processor\t: 0\n")
    assert cpu.cpu_features(tmp_path / "empty") is None
