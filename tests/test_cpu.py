"""Counting physical cores from a CPU topology (a fake sysfs tree), and the fallback without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from speech_to_speech import cpu


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
    assert 1 <= cpu.physical_cores() <= len(cpu.usable_cpus())


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
