"""transformers LLM: the packaged GGUF converted once into the cache; streaming matches one-shot decoding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.chat_prompt import chat_turns, render_prompt
from speech_to_speech.llm.transformers_lm import LoadedLM, TransformersLM
from speech_to_speech.llm.weights import packaged_gguf, resolve_source
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest, TokenUsage

pytestmark = pytest.mark.real_models
QUESTION = GenerateResponseRequest("resp_1", 0, (ChatMessage("user", "What is the capital of France?"),))


def test_packaged_gguf_is_converted_once_into_the_cache(lm: LoadedLM) -> None:
    folder = Path(lm.source)
    assert folder.name.startswith(packaged_gguf().stem)
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config  # saved as a plain dense model
    # Every way of naming the packaged file lands on the same cached conversion, untouched.
    written = (folder / "config.json").stat().st_mtime_ns
    assert resolve_source(str(packaged_gguf())) == lm.source
    assert resolve_source(str(packaged_gguf().parent)) == lm.source
    assert (folder / "config.json").stat().st_mtime_ns == written


def test_streamed_reply_is_the_one_shot_greedy_decode(lm: LoadedLM, make_handler: Any) -> None:
    settings = ServerSettings(llm="transformers")
    parts = list(make_handler(TransformersLM, lm, settings).generate(QUESTION))
    (usage,) = [p for p in parts if isinstance(p, TokenUsage)]
    prompt = render_prompt(lm.tokenizer, chat_turns(QUESTION, settings.llm))
    inputs = lm.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    output = lm.model.generate(**inputs, max_new_tokens=settings.llm.max_new_tokens, do_sample=False)
    generated = output[0, inputs["input_ids"].shape[1] :]
    assert "".join(p for p in parts if isinstance(p, str)) == lm.tokenizer.decode(generated, skip_special_tokens=True)
    assert usage.input_tokens == inputs["input_ids"].shape[1]
    assert usage.output_tokens == len(generated)
