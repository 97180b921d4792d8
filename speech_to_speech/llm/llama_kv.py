"""What a llama.cpp context still holds of a new prompt, and the cut that keeps it after a trim.

llama-cpp-python reuses the longest prefix its context shares with a new
prompt and reads the rest. When the conversation is trimmed
(llm/context_window.py), exchanges leave the middle of the prompt: the
instructions and the pinned opening still match, then the prompt jumps over
a block the context holds to the exchanges that follow it. Instead of reading
those again (thousands of tokens, seconds on a CPU), the block is removed
from the KV cache and what follows it is shifted back into place
(llama.cpp moves the keys' rotary positions), as llama.cpp's own context
shift does: the tokens that stay were read with the dropped block before
them, which changes what they hold no more than the dropped words would have.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

# A cut is worth making for at least this many tokens kept (below it, reading them is cheaper than looking).
MIN_KEPT_RUN = 16
MAX_CANDIDATES = 64  # places the rest of the prompt may resume in the cache, tried longest match first


def held_prefix(llm: Any, tokens: Sequence[int]) -> int:
    """How many of ``tokens`` the context holds from its start."""
    held = np.asarray(llm.input_ids[: llm.n_tokens])
    wanted = np.asarray(tokens[: len(held)])
    differs = np.nonzero(held[: len(wanted)] != wanted)[0]
    return int(differs[0]) if len(differs) else len(wanted)


def _run(held: np.ndarray, start: int, wanted: np.ndarray) -> int:
    """How long ``held[start:]`` agrees with ``wanted``."""
    length = min(len(held) - start, len(wanted))
    differs = np.nonzero(held[start: start + length] != wanted[:length])[0]
    return int(differs[0]) if len(differs) else length


def cut_dropped_block(llm: Any, tokens: Sequence[int]) -> int:
    """Remove from ``llm``'s cache the block a trim dropped from ``tokens``, if it holds one; returns how many
    of ``tokens`` the context then holds from its start (what the next read skips)."""
    import llama_cpp

    prefix = held_prefix(llm, tokens)
    cached = llm.n_tokens
    if prefix >= len(tokens) or prefix >= cached:
        return prefix
    held = np.asarray(llm.input_ids[:cached])
    rest = np.asarray(tokens[prefix:])
    candidates = np.nonzero(held[prefix + 1:] == rest[0])[0][:MAX_CANDIDATES] + prefix + 1
    runs = [(_run(held, int(start), rest), int(start)) for start in candidates]
    if not runs:
        return prefix
    kept, resume = max(runs)
    if kept < MIN_KEPT_RUN:
        return prefix
    memory = llama_cpp.llama_get_memory(llm.ctx)
    if not llama_cpp.llama_memory_can_shift(memory) or not llama_cpp.llama_memory_seq_rm(memory, 0, prefix, resume):
        return prefix  # this model's cache cannot move: the rest is read as before
    gap = resume - prefix
    end = resume + kept
    llama_cpp.llama_memory_seq_rm(memory, 0, end, -1)  # what follows the kept run is not the prompt's
    llama_cpp.llama_memory_seq_add(memory, 0, resume, end, -gap)
    llm.input_ids[prefix: prefix + kept] = held[resume:end]
    llm.n_tokens = prefix + kept
    log.debug("kept %d cached tokens past a dropped block of %d", kept, gap)
    return prefix + kept
