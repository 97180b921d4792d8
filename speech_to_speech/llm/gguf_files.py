"""The GGUF file a llama.cpp model loads: named by ``--llm_model`` (or ``--llm_tool_call_model``), and
rewritten once to another weight type (``--llm_gguf_type``)."""

from __future__ import annotations

import ctypes
import logging
import os
from pathlib import Path

from speech_to_speech.cache import cached_conversion
from speech_to_speech.config import GGUFWeightType
from speech_to_speech.llm.packaged import packaged_path
from speech_to_speech.llm.weights import gguf_cache_name, gguf_in, packaged_gguf

log = logging.getLogger(__name__)

REWRITTEN = "model.gguf"  # the rewritten file's name in its cache folder


def gguf_path(llm_model: str | None) -> Path:
    if llm_model is None:
        return packaged_gguf()
    path = Path(packaged_path(llm_model) or llm_model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path
    found = gguf_in(path) if path.is_dir() else None
    if found is None:
        raise RuntimeError(f"--llm llama-cpp needs a .gguf file or a folder holding one; got {llm_model!r}")
    return found

def rewritten_gguf(gguf: Path, weight_type: GGUFWeightType) -> Path:
    """``gguf`` with its weights rewritten as ``weight_type``, made once into the model cache.

    Why: llama.cpp's CPU kernels are not equally fast for every type. The
    packaged SmolLM2 is Q4_1; as Q8_0 (every weight within 1/254 of its
    block's range of the Q4_1 value) it decodes ~20 % faster and reads a
    prompt ~35 % faster on one core here. Its greedy replies are not the Q4_1
    file's (the two kernels round activations differently, and a 135M model
    amplifies that): bench quality scored it 65 % against 55 % for the same
    model in int8 on CTranslate2.
    """
    import llama_cpp

    def rewrite(folder: Path) -> None:
        log.info("rewriting %s as %s once", gguf.name, weight_type)
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{weight_type.upper()}")
        params.allow_requantize = True
        params.nthread = os.cpu_count() or 1
        status = llama_cpp.llama_model_quantize(str(gguf).encode(), str(folder / REWRITTEN).encode(),
                                                ctypes.byref(params))
        if status != 0:
            raise RuntimeError(f"llama.cpp could not rewrite {gguf} as {weight_type} (status {status})")

    return cached_conversion(f"{gguf_cache_name(gguf)}-{weight_type}", REWRITTEN, rewrite) / REWRITTEN

