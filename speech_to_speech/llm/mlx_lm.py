"""Local LLM on Apple Silicon with mlx-lm, streamed token by token.

MLX runs only on macOS/arm64, so on any other machine the loader stops with
a clear message instead of an ImportError from deep inside mlx.
"""

from __future__ import annotations

import platform
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech import registry
from speech_to_speech.config import LLMSettings, LoadContext
from speech_to_speech.llm.base import GeneratedPart, LLMHandler, Terminal
from speech_to_speech.llm.chat_prompt import prompt_for
from speech_to_speech.llm.tools import split_tool_calls
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest, TokenUsage

# mlx-lm cannot read the packaged GGUF; this is the same model converted for MLX (hub, 8-bit).
DEFAULT_MODEL = "mlx-community/SmolLM2-135M-Instruct-8bit"


@dataclass(frozen=True)
class LoadedMLX:
    model: Any
    tokenizer: Any
    source: str
    # MLX's streams and caches are not made for concurrent use from several threads.
    lock: threading.Lock = field(default_factory=threading.Lock)


def require_apple_silicon(system: str | None = None, machine: str | None = None) -> None:
    system = system or sys.platform
    machine = machine or platform.machine()
    if system != "darwin" or machine != "arm64":
        raise RuntimeError(
            f"the mlx-lm backend needs Apple Silicon (macOS on arm64); this machine is {system}/{machine}. "
            "Use --llm ctranslate2 (the default) here, or on a Mac: pip install 'speech-to-speech[mlx]'"
        )


def load_mlx(settings: LLMSettings, context: LoadContext) -> LoadedMLX:
    require_apple_silicon()
    try:
        from mlx_lm import load
    except ImportError as error:
        raise RuntimeError(
            "the mlx-lm backend needs the mlx extra: pip install 'speech-to-speech[mlx]'"
        ) from error
    source = settings.model or DEFAULT_MODEL
    model, tokenizer = load(source)
    return LoadedMLX(model=model, tokenizer=tokenizer, source=source)


@registry.register("llm", "mlx-lm", load_mlx)
class MLXLM(LLMHandler):
    """Streams from the shared MLX model, one unit at a time."""

    model: LoadedMLX

    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        from mlx_lm import stream_generate
        from mlx_lm.sample_utils import make_logits_processors, make_sampler

        lm = self.model
        prompt = prompt_for(lm.tokenizer, request, self.settings)
        limit = request.max_output_tokens or self.settings.max_new_tokens
        progress: dict[str, Any] = {"prompt": 0, "output": 0, "finish": None}
        settings = self.settings
        sampler = make_sampler(temp=settings.temperature, top_p=settings.top_p)
        penalties = make_logits_processors(
            repetition_penalty=settings.repetition_penalty if settings.repetition_penalty != 1.0 else None)

        def texts() -> Iterator[str]:
            for step in stream_generate(lm.model, lm.tokenizer, prompt, max_tokens=limit, sampler=sampler,
                                        logits_processors=penalties):
                progress.update(prompt=step.prompt_tokens, output=step.generation_tokens, finish=step.finish_reason)
                if step.text:
                    yield step.text
                if self.cancel_scope.is_stale(request.generation):
                    return  # leaving the loop stops mlx-lm's generator: no token is computed after this

        with lm.lock:
            yield from split_tool_calls(request, texts())
        yield TokenUsage(request.response_id, request.generation, progress["prompt"], progress["output"])
        if progress["finish"] == "length":
            yield Terminal("incomplete", reason="max_output_tokens")
