"""What a draft would buy the 1.5B: speculative decoding against plain decoding, one question at a time.

Greedy replies of the packaged Qwen2.5-Coder models on the typed questions of
bench quality's sets (tool and multi-turn requests left out), the quality
preset's system prompt read once before. Each question goes to every mode in
turn, so that a busy neighbour slows them all alike. Modes:

- ``small``, ``large``: the 0.5B and the 1.5B, plain; ``large:q4_0`` (any
  ``--llm_gguf_type``) the 1.5B rewritten.
- ``specN``: the 1.5B verifying N tokens drafted greedily by the 0.5B in a
  context of its own (llama-cpp-python's ``draft_model``; it keeps the logits
  of every token read, the prompt's too).
- ``lookupN``: the 1.5B verifying N tokens copied from the prompt (n-grams).

Per mode: answers right, time to the first and to the sixth token (about
the three words the voice waits for), ms a token after the first, and
whether each reply is the plain 1.5B's. Two threads, as on the 2-core machine.

    .venv/bin/python scripts/llama_draft_probe.py --modes small,large,spec3,lookup4 --sets everyday \\
        [--requests 10] [--out docs/benchmarks/answers_at_speed/draft_probe.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech.bench.quality import load_set, set_path
from speech_to_speech.bench.quality_score import score
from speech_to_speech.llm.llama_backends import load_cpu_kernels
from speech_to_speech.llm.llama_cpp_lm import rewritten_gguf
from speech_to_speech.llm.packaged import joined_gguf
from speech_to_speech.presets import SPEECH_PROMPT

SMALL, LARGE = "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"
END = {151645, 151643}  # <|im_end|>, <|endoftext|>
THREADS = 2


def _draft_model(draft: Any, tokens: int) -> Any:
    from llama_cpp.llama_speculative import LlamaDraftModel

    class ContextDraft(LlamaDraftModel):
        """Greedy tokens of a second model, read on from what its context already holds."""

        def __init__(self) -> None:
            self.drafted = self.calls = 0

        def __call__(self, input_ids: Any, /, **kwargs: Any) -> Any:
            ids = [int(t) for t in input_ids]
            same = 0
            for held, wanted in zip(draft._input_ids, ids, strict=False):
                if held != wanted:
                    break
                same += 1
            same = min(same, len(ids) - 1)  # the last token is read again: its logits are the next draft
            draft._ctx.kv_cache_seq_rm(-1, same, -1)
            draft.n_tokens = same
            draft.eval(ids[same:])
            out: list[int] = []
            for index in range(tokens):
                logits = np.ctypeslib.as_array(draft._ctx.get_logits_ith(-1), shape=(draft.n_vocab(),))
                out.append(int(logits.argmax()))
                if out[-1] in END or index == tokens - 1:
                    break
                draft.eval([out[-1]])
            self.drafted += len(out)
            self.calls += 1
            return np.array(out, dtype=np.intc)

    return ContextDraft()


def _load(name: str, weight_type: str = "file", **kwargs: Any) -> Any:
    from llama_cpp import Llama

    path = joined_gguf(name) if weight_type == "file" else rewritten_gguf(joined_gguf(name), weight_type)  # type: ignore[arg-type]
    return Llama(model_path=str(path), n_ctx=4096, n_threads=THREADS, n_threads_batch=THREADS, verbose=False,
                 **kwargs)


def _mode(mode: str) -> tuple[Any, Any]:
    """(the Llama that answers, its draft or None)."""
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    if mode in ("small", "large"):
        return _load(SMALL if mode == "small" else LARGE), None
    if ":" in mode:
        name, weight_type = mode.split(":")
        return _load(SMALL if name == "small" else LARGE, weight_type), None
    if mode.startswith("spec"):
        draft = _draft_model(_load(SMALL), int(mode[4:]))
        return _load(LARGE, draft_model=draft), draft
    if mode.startswith("lookup"):
        return _load(LARGE, draft_model=LlamaPromptLookupDecoding(num_pred_tokens=int(mode[6:]))), None
    raise SystemExit(f"unknown mode {mode!r}")


def _prompt(question: str) -> str:
    return (f"<|im_start|>system\n{SPEECH_PROMPT}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n"
            "<|im_start|>assistant\n")


def _ask(llm: Any, question: str) -> tuple[list[int], list[float]]:
    tokens = llm.tokenize(_prompt(question).encode(), add_bos=False, special=True)
    start = time.perf_counter()
    times: list[float] = []
    out: list[int] = []
    for token in llm.generate(tokens, temp=0.0, top_k=1, repeat_penalty=1.0):
        times.append(time.perf_counter() - start)
        if token in END or len(out) >= 96:
            break
        out.append(token)
    return out, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default="small,large,spec3,lookup4")
    parser.add_argument("--sets", default="everyday")
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    load_cpu_kernels()
    modes = args.modes.split(",")
    models = {mode: _mode(mode) for mode in modes}
    requests = [r for s in args.sets.split(",") for r in load_set(set_path(s))
                if r["category"] not in ("tool", "multiturn")][: args.requests]
    for llm, _ in models.values():
        _ask(llm, "Hi")  # the system prompt, read once
    rows: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for request in requests:
        for mode, (llm, _) in models.items():
            out, times = _ask(llm, request["turns"][-1])
            reply = llm.detokenize(out).decode("utf-8", "replace")
            rows[mode].append({"name": request["name"], "reply": reply, "correct": score(request, reply, []).correct,
                               "first_ms": times[0] * 1000, "sixth_ms": times[min(5, len(times) - 1)] * 1000,
                               "ms_per_token": (times[-1] - times[0]) * 1000 / max(1, len(times) - 1)})
        timed = " ".join(f"{m}:{rows[m][-1]['first_ms']:.0f}/{rows[m][-1]['sixth_ms']:.0f}" for m in modes)
        print(request["name"], timed, flush=True)
    summary: dict[str, dict[str, Any]] = {}
    for mode, found in rows.items():
        summary[mode] = {"n": len(found), "right": sum(r["correct"] for r in found),
                         "first_token_ms_p50": statistics.median(r["first_ms"] for r in found),
                         "sixth_token_ms_p50": statistics.median(r["sixth_ms"] for r in found),
                         "ms_per_token_p50": statistics.median(r["ms_per_token"] for r in found)}
        if "large" in rows:
            same = sum(a["reply"] == b["reply"] for a, b in zip(found, rows["large"], strict=True))
            summary[mode]["same_reply_as_large"] = same
        draft = models[mode][1]
        if draft is not None:
            summary[mode]["drafted_per_call"] = draft.drafted / max(1, draft.calls)
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"modes": modes, "sets": args.sets, "threads": THREADS, "summary": summary,
                                        "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
