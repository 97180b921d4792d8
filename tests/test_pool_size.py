"""``--num_pipelines auto``: units by usable CPUs, capped by free memory and a bound; a number as given."""

from __future__ import annotations

from pathlib import Path

import pytest

from speech_to_speech import pool_size as sizing
from speech_to_speech.pool_size import MAX_AUTO_UNITS, MODELS_BYTES, UNIT_BYTES, auto_size, pool_size

GIB = 2**30


def test_two_units_per_usable_cpu_where_memory_is_plenty() -> None:
    size = auto_size(cpus=2, memory=24 * GIB)
    assert size.units == 4
    assert "2 per usable CPU (2)" in size.reason and "memory for" in size.reason


def test_a_large_host_gets_the_bound_not_a_unit_per_thread() -> None:
    size = auto_size(cpus=64, memory=512 * GIB)
    assert size.units == MAX_AUTO_UNITS
    assert f"at most {MAX_AUTO_UNITS}" in size.reason


@pytest.mark.parametrize("units_that_fit", [1, 2, 3])
def test_memory_caps_the_count(units_that_fit: int) -> None:
    free = MODELS_BYTES + units_that_fit * UNIT_BYTES + UNIT_BYTES // 2
    assert auto_size(cpus=8, memory=free).units == units_that_fit


def test_too_little_memory_still_leaves_one_unit() -> None:
    assert auto_size(cpus=4, memory=MODELS_BYTES // 2).units == 1


def test_unknown_memory_is_no_cap() -> None:
    size = auto_size(cpus=3, memory=None)
    assert size.units == 6 and "memory" not in size.reason


def test_a_number_is_taken_as_it_is() -> None:
    size = pool_size(7)
    assert size.units == 7 and "--num_pipelines" in size.reason


def test_auto_reads_this_process_cpus_and_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sizing, "usable_cpu_count", lambda: 1)
    monkeypatch.setattr(sizing, "available_memory", lambda: 64 * GIB)
    assert pool_size("auto").units == 2


def test_free_memory_is_the_tightest_of_the_kernel_and_the_cgroups(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:    8388608 kB\n")  # 8 GiB
    limited, unlimited = tmp_path / "limited", tmp_path / "unlimited"
    limited.mkdir()
    unlimited.mkdir()
    (limited / "memory.max").write_text(f"{3 * GIB}\n")
    (limited / "memory.current").write_text(f"{GIB}\n")
    (unlimited / "memory.max").write_text("max\n")
    assert sizing.available_memory(meminfo, [unlimited]) == 8 * GIB
    assert sizing.available_memory(meminfo, [limited, unlimited]) == 2 * GIB
    assert sizing.available_memory(tmp_path / "absent", [unlimited]) is None
