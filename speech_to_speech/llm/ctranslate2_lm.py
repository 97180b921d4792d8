"""Local LLM on CTranslate2: the default, int8 on CPU, streamed token by token.

CTranslate2 is already here for faster-whisper. On this 2-core machine it
decodes SmolLM2-135M at ~95 tokens/s in int8 against ~20 for transformers in
float32, loads in 0.3 s and keeps ~150 MB of weights, and it needs neither
torch nor transformers at run time (the tokenizer and chat template are read
by ``llm.local_tokenizer``).

``--llm_model`` takes what the transformers backend takes (the packaged GGUF
by default, a .gguf, a transformers folder or a hub id): the first load
converts it once into the model cache (``<name>-ct2-<compute type>``; this
step imports transformers and torch, ~30 s for SmolLM2 with the GGUF step).
A folder that already is a CTranslate2 model (``model.bin`` beside its
tokenizer files) is used as it is.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speech_to_speech import registry
from speech_to_speech.cache import cached_conversion
from speech_to_speech.config import LLMSettings, LoadContext
from speech_to_speech.cpu import half_the_cpus
from speech_to_speech.llm.base import GeneratedPart, LLMHandler, Terminal
from speech_to_speech.llm.chat_prompt import prompt_for
from speech_to_speech.llm.local_tokenizer import LocalTokenizer
from speech_to_speech.llm.tools import split_tool_calls
from speech_to_speech.llm.weights import resolve_source
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest, TokenUsage
from speech_to_speech.pool_size import pool_size

log = logging.getLogger(__name__)

# Files the runtime reads beside model.bin; only tokenizer.json is required.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")
# Compute types that are also weight formats: converting to them keeps the cache small.
QUANTIZATIONS = {"int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16", "bfloat16", "float32"}


@dataclass(frozen=True)
class LoadedCT2:
    """What every unit shares: the generator (thread-safe, one replica per unit) and the tokenizer."""

    generator: Any
    tokenizer: LocalTokenizer
    source: str


# ------------------------------------------------------------------ conversion


def is_ct2_model(folder: Path) -> bool:
    return (folder / "model.bin").exists() and (folder / "tokenizer.json").exists()


def _local_folder(source: str) -> Path:
    """A transformers folder for ``source``: itself if it is a folder, else the hub snapshot."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    from huggingface_hub import snapshot_download

    log.info("fetching %s from the hub (needs a network the first time)", source)
    return Path(snapshot_download(source, allow_patterns=["*.json", "*.safetensors", "*.jinja", "*.model"]))


def _cache_name(source: str, compute_type: str) -> str:
    # The folder's name for a reader, a digest of its full path or hub id so two sources never collide.
    digest = hashlib.sha256(str(Path(source).expanduser().resolve() if Path(source).exists() else source).encode())
    return f"{Path(source).name}-{digest.hexdigest()[:8]}-ct2-{compute_type}"


def converted_for_ct2(source: str, compute_type: str) -> Path:
    """The CTranslate2 model of a transformers folder or hub id, converted once into the cache."""
    folder = Path(source).expanduser()
    if is_ct2_model(folder):
        return folder
    if (folder / "model.bin").exists():
        raise RuntimeError(f"{folder} is a CTranslate2 model without its tokenizer.json beside model.bin")

    def convert(folder: Path) -> None:
        from ctranslate2.converters import TransformersConverter

        model_folder = _local_folder(source)
        log.info("converting %s for CTranslate2 (%s) once", model_folder.name, compute_type)
        quantization = compute_type if compute_type in QUANTIZATIONS else None
        # The converter collects garbage after every layer; each pass walked every object the process holds
        # (the GGUF step leaves hundreds of thousands): 6.2 of SmolLM2's 7.0 s. Frozen, they are skipped.
        gc.freeze()
        try:
            TransformersConverter(str(model_folder), low_cpu_mem_usage=True).convert(
                str(folder), quantization=quantization, force=True
            )
        finally:
            gc.unfreeze()
        for name in TOKENIZER_FILES:
            if (model_folder / name).exists():
                shutil.copy(model_folder / name, folder / name)

    return cached_conversion(_cache_name(source, compute_type), "model.bin", convert)


# ------------------------------------------------------------------ loading


def _device(setting: str) -> str:
    import ctranslate2

    if setting == "auto":
        return "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
    if setting not in ("cpu", "cuda"):
        raise RuntimeError(f"the ctranslate2 LLM runs on cpu or cuda, not {setting!r}; use --llm transformers")
    return setting


def load_ctranslate2(settings: LLMSettings, context: LoadContext) -> LoadedCT2:
    import ctranslate2

    folder = converted_for_ct2(resolve_source(settings.model), settings.compute_type)
    device = _device(context.device)
    generator = ctranslate2.Generator(
        str(folder),
        device=device,
        compute_type=settings.compute_type,
        # One replica per unit so sessions decode side by side; replicas share the weights.
        inter_threads=pool_size(context.num_pipelines).units,
        # A small model decodes no faster on more threads, and STT and TTS run beside it.
        intra_threads=settings.threads or half_the_cpus(),
    )
    return LoadedCT2(generator=generator, tokenizer=LocalTokenizer(folder), source=str(folder))


# ------------------------------------------------------------------ generation


@registry.register("llm", "ctranslate2", load_ctranslate2)
class CTranslate2LM(LLMHandler):
    """Streams a reply from the shared generator; a stale generation stops decoding at the next token."""

    model: LoadedCT2

    def _sampling(self) -> dict[str, Any]:
        settings = self.settings
        penalty = {"repetition_penalty": settings.repetition_penalty}
        if settings.temperature <= 0:
            return {"sampling_topk": 1, **penalty}
        return {"sampling_topk": 0, "sampling_temperature": settings.temperature, "sampling_topp": settings.top_p,
                **penalty}

    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        lm = self.model
        prompt = lm.tokenizer.tokens(prompt_for(lm.tokenizer, request, self.settings))
        limit = request.max_output_tokens or self.settings.max_new_tokens
        end_ids = lm.tokenizer.end_token_ids
        generated: list[int] = []
        stale = self.cancel_scope.is_stale

        def texts() -> Iterator[str]:
            stream = lm.tokenizer.decode_stream()
            steps = lm.generator.generate_tokens(
                prompt,
                max_length=limit,
                end_token=list(end_ids) or None,
                # Runs on CTranslate2's thread after every token: True stops the decoding there.
                callback=lambda _step: stale(request.generation),
                **self._sampling(),
            )
            try:
                for step in steps:
                    generated.append(step.token_id)  # the end token too: it was generated, and counts
                    text = stream.step(step.token_id)
                    if text:
                        yield text
            finally:
                steps.close()  # a consumer that stops early stops the decoding too

        yield from split_tool_calls(request, texts())
        yield TokenUsage(request.response_id, request.generation, len(prompt), len(generated))
        if len(generated) >= limit and generated[-1] not in end_ids:
            yield Terminal("incomplete", reason="max_output_tokens")
