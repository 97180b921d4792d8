"""A second, larger model that writes the tool calls the main model starts (``--llm_tool_call_model``).

On tools it has never seen, the default 0.5B chooses to call about as
well as the 1.5B but fills the arguments in wrong (``Berlin`` for
``Europe/Berlin``, guests' names made up): bench tools, held-out requests.
So the main model still reads the prompt, decides whether the reply is a
call (its first token, ``--llm_tool_call_threshold``) and says every answer,
and once it starts a call the call itself (~40 tokens under the tools'
grammar, while the preamble is spoken) is decoded by the writer from the
same prompt tokens: the two models share a tokenizer, so the tokens carry
over as they are. The writer has one context for the whole server (each
llama.cpp instance of the 1.5B holds ~780 MB of its own; four, one per
unit, took a 4-unit serve from about 3 to 10.7 GB of RSS): a call is short
and rare, and its KV cache keeps what it read last, the system prompt and
the tools that every session with the same tools shares. A session's
prompt is read ahead into it in the process's idle time (``llm/idle_read.py``,
asked by ``LlamaCppLM.prefill``). Where
the writer has not read the tools yet (the first session after a start,
the user quicker than the read ahead) or is busy (another session's call),
the main model writes the call as before, rather than keep the user
waiting.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.llm.idle_read import IdleReader
from speech_to_speech.llm.llama_contexts import ContextPool
from speech_to_speech.llm.llama_kv import cut_dropped_block
from speech_to_speech.llm.packaged import PACKAGED

log = logging.getLogger(__name__)

# A writer that has not read more of the prompt than this leaves the call to the main model: reading the tools
# (~1100 tokens for bench tools' five) would keep the user waiting far longer than a wrong argument costs.
MAX_UNREAD = 256
PROBED_TOKENS = 200  # tokens compared, spread over the two vocabularies (all of them would take a second)
# Tokens the writer reads ahead between two looks at whether urgent work of ours has started (which shares the
# CPU with the rest of the step). A step costs the 1.5B about one read of its weights whatever its size, up to
# a few dozen tokens: 16 took ~210 ms on two quiet cores here (~400 ms on one), 6 took ~150 (~300), at half
# the rate; 16 held bench tools' tools after five requests on a busy machine, 6 not after eight.
READ_STEP = 16


@dataclass(frozen=True)
class CallWriter:
    """The writer model's context (its KV cache, in a pool of one), the file it was loaded from, and what reads
    sessions' prompts into it in idle time."""

    pool: ContextPool
    path: Path
    reader: IdleReader

    def ready_context(self, tokens: list[int], holder: ExitStack) -> Any | None:
        """The writer's context, if it is free and holds all but ``MAX_UNREAD`` of ``tokens`` at most, checked out
        until ``holder`` closes; None where not (the main model writes the call then)."""
        with ExitStack() as attempt:
            with self.reader.paused():  # a read ahead's step in flight is no call: it ends, and the call has it
                free = attempt.enter_context(self.pool.checkout_if_free())
            if free is None:
                return None
            _, llm = free
            held = cut_dropped_block(llm, tokens)
            if len(tokens) - held > MAX_UNREAD:
                log.info("the call writer holds %d of the prompt's %d tokens: the main model writes the call", held,
                         len(tokens))
                self.read_ahead(tokens)  # in the idle time that comes, for this session's next call
                return None
            holder.enter_context(attempt.pop_all())
            return llm

    def read_ahead(self, tokens: list[int]) -> None:
        """Read ``tokens`` into the writer's context in idle time, from where it stops holding them."""
        self.reader.want(tokens)


def same_tokenizer(main: Any, writer: Any) -> bool:
    """Whether two llama.cpp models write every token id as the same text (checked on a sample of ids)."""
    if main.n_vocab() != writer.n_vocab():
        return False
    probes = [*range(0, main.n_vocab(), max(1, main.n_vocab() // PROBED_TOKENS)), main.token_eos(),
              main.n_vocab() - 1]
    return all(main.detokenize([token], special=True) == writer.detokenize([token], special=True)
               for token in probes)


def writer_path(name: str, resolve: Callable[[str], Path]) -> Path | None:
    """The GGUF file of writer model ``name``; None, with a warning, where it is a packaged model whose
    weights are not installed (a preset names it, and a server without them still runs)."""
    try:
        return resolve(name)
    except RuntimeError as error:
        if name not in PACKAGED:
            raise
        log.warning("--llm_tool_call_model %s left out, the main model writes its calls: %s", name, error)
        return None


def load_call_writer(path: Path, main: Any, make_context: Callable[[Path], Any], idle: Callable[[], bool],
                     prepare_step: Callable[[Any], None]) -> CallWriter:
    """A context over the writer model at ``path``, read into while ``idle()`` (``prepare_step`` sets the context's
    threads before each step of it); refused if it does not share ``main``'s tokenizer."""
    context = make_context(path)
    if not same_tokenizer(main, context):
        raise RuntimeError(f"--llm_tool_call_model {path.name} has another tokenizer than --llm_model's; "
                           "the writer must share it (e.g. the 0.5B and 1.5B of one model family)")
    pool = ContextPool([context])
    return CallWriter(pool=pool, path=path, reader=IdleReader("call writer", pool, idle, prepare_step, READ_STEP))
