"""Greedy decoding that asks the grammar about the model's choice first (llm/grammar_first.py) draws the tokens
llama.cpp's own grammar sampler draws, on the real Qwen2.5 0.5B: where the model's choice is allowed, and where
a processor makes it choose what the grammar refuses."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.call_grammar import LogitsProcessor, call_grammars
from speech_to_speech.llm.grammar_first import grammar_first_tokens
from speech_to_speech.llm.llama_cpp_lm import load_llama_cpp
from speech_to_speech.llm.tools import FunctionTool
from speech_to_speech.presets import preset
from speech_to_speech.testing.engine import loading

pytestmark = pytest.mark.real_models

CLOCK = FunctionTool("get_current_time", "Get the current time in a timezone.",
                     {"type": "object", "required": ["timezone"],
                      "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}}})
TOKENS = 40


@pytest.fixture(scope="module")
def qwen() -> Any:
    pytest.importorskip("llama_cpp", reason="the default preset runs on llama.cpp (the llama-cpp extra)")
    return load_llama_cpp(*loading("llm", ServerSettings(**preset("quality")))).llm


def _prompt(llm: Any, question: str) -> list[int]:
    tools = json.dumps({"type": "function", "function": {"name": CLOCK.name, "parameters": CLOCK.parameters}})
    text = (f"<|im_start|>system\nYou may call this tool:\n{tools}<|im_end|>\n<|im_start|>user\n{question}"
            "<|im_end|>\n<|im_start|>assistant\n<tool_call>\n")
    return list(llm.tokenize(text.encode(), add_bos=False, special=True))


def _first(llm: Any, tokens: Any, limit: int) -> list[int]:
    """The tokens up to the call's end (its closing tag), at most ``limit``."""
    taken: list[int] = []
    for token in tokens:
        taken.append(token)
        if len(taken) == limit or b"</tool_call>" in llm.detokenize(taken):
            break
    return taken


def _grammar() -> Any:
    from llama_cpp import LlamaGrammar

    grammars = call_grammars([CLOCK])
    assert grammars is not None
    return LlamaGrammar.from_string(grammars.tagged, verbose=False)


def _both(llm: Any, prompt: list[int], processors: list[LogitsProcessor],
          limit: int = TOKENS) -> tuple[list[int], list[int]]:
    plain = _first(llm, llm.generate(prompt, reset=True, temp=0.0, top_k=1, repeat_penalty=1.0, grammar=_grammar(),
                                logits_processor=processors or None), limit)
    first = _first(llm, grammar_first_tokens(llm, prompt, _grammar(), processors), limit)
    return plain, first


def _call(llm: Any, tokens: list[int]) -> Any:
    return json.loads(llm.detokenize(tokens).decode().split("</tool_call>")[0])


@pytest.mark.parametrize("question", ["What time is it in Tokyo?", "And what's the time in Paris now?"])
def test_the_call_is_the_one_llama_cpp_s_grammar_sampler_draws(qwen: Any, question: str) -> None:
    plain, first = _both(qwen, _prompt(qwen, question), [])
    # The same call. Token for token only where no two choices are near-tied: the two decode in different batch
    # sizes, whose kernels round differently (on an AVX2-only EPYC llama.cpp's sampler opened "And what's the
    # time in Paris now?"'s call with a line break the grammar allows, grammar-first without it).
    assert _call(qwen, first) == _call(qwen, plain)
    assert _call(qwen, first)["name"] == "get_current_time"


def test_a_choice_the_grammar_refuses_is_replaced_by_the_likeliest_it_allows(qwen: Any) -> None:
    # The processor makes a blank line the model's choice at every step: the call's grammar refuses it everywhere
    # (a JSON string holds no raw line break), so the likeliest token it allows is drawn instead.
    [blank_line] = qwen.tokenize(b"\n\n", add_bos=False)

    def blank_line_first(_ids: Any, scores: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        scores[blank_line] = float(np.max(scores)) + 10.0
        return scores

    plain, first = _both(qwen, _prompt(qwen, "What time is it in Tokyo?"), [blank_line_first])
    assert first == plain
    assert blank_line not in first
    assert _call(qwen, first)["name"] == "get_current_time"
