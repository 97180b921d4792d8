"""Local LLM on transformers + torch, streamed token by token.

Default model: the packaged SmolLM2-135M-Instruct (see ``llm.weights``: its
GGUF is converted once into the model cache, later loads take ~2 s).
``--llm_model`` also takes a hub id, a local model folder or a .gguf path.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from speech_to_speech import registry
from speech_to_speech.config import LLMSettings, LoadContext
from speech_to_speech.cpu import half_the_cpus
from speech_to_speech.llm.base import GeneratedPart, LLMHandler, Terminal
from speech_to_speech.llm.chat_prompt import prompt_for
from speech_to_speech.llm.tools import split_tool_calls
from speech_to_speech.llm.weights import resolve_source
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest, TokenUsage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedLM:
    """What every unit shares: the torch model, its tokenizer and the device it sits on."""

    model: Any
    tokenizer: Any
    device: str
    source: str


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


def load_transformers(settings: LLMSettings, context: LoadContext) -> LoadedLM:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = resolve_source(settings.model)
    device = _device(context.device)
    if device == "cpu":
        # Half the cores: STT and TTS run beside the LLM, and a small model decodes no
        # faster with more threads (SmolLM2-135M: ~20 tok/s on 1 thread, ~15 on 2 here).
        torch.set_num_threads(settings.threads or half_the_cpus())
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
        settings = self.settings
        penalty = {"repetition_penalty": settings.repetition_penalty}
        if settings.temperature <= 0:
            return {"do_sample": False, **penalty}
        return {"do_sample": True, "temperature": settings.temperature, "top_p": settings.top_p, **penalty}

    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        import torch
        from transformers import StoppingCriteriaList, TextIteratorStreamer

        lm = self.model
        prompt = prompt_for(lm.tokenizer, request, self.settings)
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
