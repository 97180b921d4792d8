"""What batching would buy: N replies decoded as sequences of one llama.cpp step, against N contexts side by side.

The lever docs/benchmarks names for simultaneous talkers. Greedy decoding of
the quality preset's Qwen2.5-Coder-0.5B, N short spoken-style prompts, the
same token count each; prints the wall time of both ways and their ratio.

    .venv/bin/python scripts/llama_batched_probe.py [--sequences 4] [--tokens 32] [--threads 2]
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import numpy as np

from speech_to_speech.llm.llama_backends import load_cpu_kernels
from speech_to_speech.llm.llama_cpp_lm import gguf_path

REQUESTS = ("What is the capital of France?", "How do I bake bread at home?",
            "Tell me how airplanes fly.", "Suggest a birthday gift for my sister.")
SYSTEM = "You are a friendly voice assistant."


class Probe:
    def __init__(self, threads: int) -> None:
        load_cpu_kernels()
        import llama_cpp
        from llama_cpp import Llama

        self.lib = llama_cpp
        self.threads = threads
        self.llm = Llama(model_path=str(gguf_path("qwen2.5-coder-0.5b")), n_ctx=512, verbose=False)
        self.vocab_size = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(self.llm._model.model))

    def prompt(self, index: int) -> list[int]:
        text = (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{REQUESTS[index % len(REQUESTS)]}"
                "<|im_end|>\n<|im_start|>assistant\n")
        return list(self.llm.tokenize(text.encode(), add_bos=False, special=True))

    def decode(self, sequences: int, tokens: int, threads: int) -> float:
        """Seconds to read ``sequences`` prompts and decode ``tokens`` each, all in one context."""
        lib = self.lib
        params = lib.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_seq_max = 1024 * sequences, 512, sequences
        params.n_threads = params.n_threads_batch = threads
        ctx = lib.llama_init_from_model(self.llm._model.model, params)
        batch = lib.llama_batch_init(512, 0, sequences)

        def step(items: list[tuple[int, int, int, bool]]) -> None:  # (token, position, sequence, logits?)
            batch.n_tokens = len(items)
            for i, (token, position, sequence, logits) in enumerate(items):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, position, 1
                batch.seq_id[i][0], batch.logits[i] = sequence, logits
            if lib.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")

        def greedy(i: int) -> int:
            logits: Any = np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx, i), shape=(self.vocab_size,))
            return int(logits.argmax())

        started = time.perf_counter()
        state: list[tuple[int, int]] = []  # per sequence: the next token, its position
        for sequence in range(sequences):
            prompt = self.prompt(sequence)
            step([(t, i, sequence, i == len(prompt) - 1) for i, t in enumerate(prompt)])
            state.append((greedy(-1), len(prompt)))
        for _ in range(tokens):
            step([(token, position, sequence, True) for sequence, (token, position) in enumerate(state)])
            state = [(greedy(i), position + 1) for i, (_, position) in enumerate(state)]
        elapsed = time.perf_counter() - started
        lib.llama_batch_free(batch)
        lib.llama_free(ctx)
        return elapsed

    def side_by_side(self, sequences: int, tokens: int, threads: int) -> float:
        """Seconds for ``sequences`` contexts, one per thread, each reading its prompt and decoding ``tokens``."""
        workers = [threading.Thread(target=self.decode, args=(1, tokens, threads)) for _ in range(sequences)]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="Threads of the batched context (default 2).")
    args = parser.parse_args()
    probe = Probe(args.threads)
    probe.decode(1, 4, args.threads)  # warm the weights' pages
    one = probe.decode(1, args.tokens, args.threads)
    batched = probe.decode(args.sequences, args.tokens, args.threads)
    apart = probe.side_by_side(args.sequences, args.tokens, max(1, args.threads // args.sequences))
    print(f"one reply: {one * 1000:.0f} ms; {args.sequences} batched: {batched * 1000:.0f} ms; "
          f"{args.sequences} contexts side by side: {apart * 1000:.0f} ms; batched is {apart / batched:.2f}x faster")


if __name__ == "__main__":
    main()
