"""Local LLM on llama.cpp (``llama-cpp-python``): a GGUF model as it is, quantized, streamed by token.

The default LLM backend, in an extra (``pip install 'speech-to-speech[llama-cpp]'``). PyPI has
no binary wheel of llama-cpp-python, so pip builds llama.cpp from source (a
C++ compiler and CMake). A build for the build machine's own CPU crashed on
CPUs with AMX; build it portable. What ``make`` builds: three variants of the
CPU kernels (AVX2, AVX-512, AVX-512 with VNNI and BF16) in one build with
dynamic backends, of which ``llm/llama_backends.py`` loads the best one this
CPU runs (``scripts/llama_cpp_source.sh`` cuts ggml's list of variants, as
CMake has no switch for it). Without make, AVX2 kernels only:

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \\
        pip install --no-cache-dir 'speech-to-speech[llama-cpp]'

or every CPU variant (``-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON
-DGGML_CPU_ALL_VARIANTS=ON``, about half an hour; ``make LLAMA_KERNELS=all``);
the AMX one is never loaded unless named. (pip's cache would hand back a
wheel built before with other flags.)

``--llm_model`` is a .gguf file, a folder holding one or a packaged model's
name (``llm.packaged``); the default is the packaged SmolLM2-135M (Q4_1),
loaded rewritten as Q8_0 (``--llm_gguf_type``, see :func:`rewritten_gguf`).
A context holds one sequence, so the units share a pool of them
(``llm/llama_contexts.py``, ``--llm_contexts``: one per unit up to four, ~150
MB each), and the CPU gate (``cpu/gate.py``) decides how many threads each
reply decodes on: a reply's prompt and first words before another's rest.
"""

from __future__ import annotations

import codecs
import functools
import logging
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech import registry
from speech_to_speech.config import LLMSettings, LoadContext
from speech_to_speech.cpu import gate as cpu_gate
from speech_to_speech.cpu import half_the_cpus, physical_cores
from speech_to_speech.cpu.gate import CpuGate
from speech_to_speech.llm.base import GeneratedPart, LLMHandler, Terminal
from speech_to_speech.llm.call_grammar import (
    LogitsProcessor,
    call_grammars,
    call_markup_tokens,
    call_start_tokens,
    call_starts,
    first_token_decides,
    no_call,
)
from speech_to_speech.llm.call_writer import CallWriter, load_call_writer, writer_path
from speech_to_speech.llm.chat_prompt import calls_native_tools, knows_tools, prompt_for
from speech_to_speech.llm.context_window import ModelContext
from speech_to_speech.llm.gguf_files import gguf_path, rewritten_gguf
from speech_to_speech.llm.grammar_first import grammar_first_tokens
from speech_to_speech.llm.idle_read import no_urgent_work, spare_threads_or_one
from speech_to_speech.llm.llama_backends import load_cpu_kernels
from speech_to_speech.llm.llama_contexts import ContextPool, read_ahead
from speech_to_speech.llm.llama_kv import cut_dropped_block
from speech_to_speech.llm.local_tokenizer import ChatTemplate
from speech_to_speech.llm.speakable import foreign_token_ids
from speech_to_speech.llm.tools import offered_tools, split_tool_calls
from speech_to_speech.pipeline.lm_output_processor import first_chunk_ready
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest, TokenUsage
from speech_to_speech.pool_size import pool_size

log = logging.getLogger(__name__)

# The default context: a conversation of ~60 spoken exchanges, with the system prompt and tool stubs, before the
# first cut (llm/context_window.py); ~150 MB of KV cache and buffers per context for the packaged models.
CONTEXT_TOKENS = 4096
TOKEN_COUNTS_CACHED = 4096  # message texts whose token counts are kept: a conversation's, many times over
MISSING = (
    "the llama-cpp backend needs llama-cpp-python: pip install --no-cache-dir 'speech-to-speech[llama-cpp]' "
    "(it builds llama.cpp from source; set CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON "
    "-DGGML_F16C=ON\" first, or -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON for every CPU's kernels: a "
    "build for the machine's own CPU crashed on CPUs with AMX); or run --llm ctranslate2, which needs none"
)


# Tokens a prompt read ahead reads between its checks: a request arriving meanwhile waits ~40 ms at
# most (Qwen2.5 0.5B on two threads reads ~150 tokens a second here).
PREFILL_STEP = 6
MAX_DEFAULT_CONTEXTS = 4  # contexts without --llm_contexts: one per unit up to this many (~150 MB each)


class _PlainTranscript:
    """What render_prompt gets for a GGUF without a chat template: no template, a plain transcript."""

    chat_template = None


@dataclass(frozen=True)
class DecodeThreads:
    """How many threads read a prompt (``batch``), decode a reply's first words, and decode the rest.

    Until the first words can be spoken nothing else runs, so they decode on every physical core
    (~12 ms a token instead of ~18 here); from then on the TTS speaks beside the LLM and decoding, bound
    by memory, keeps one core's share so the voice is never starved.
    """

    batch: int
    first_words: int
    rest: int


@dataclass(frozen=True)
class LoadedLlama:
    """The llama.cpp contexts of one model that the units share, and the chat template stored in its GGUF."""

    pool: ContextPool
    template: ChatTemplate | _PlainTranscript
    path: Path
    foreign_tokens: npt.NDArray[np.intp]  # tokens that write a script other than Latin (llm/speakable.py)
    call_tokens: npt.NDArray[np.intp]  # tokens that start a tool call at a reply's start (llm/call_grammar.py)
    markup_tokens: npt.NDArray[np.intp]  # tokens that write any of a call's markup (braces, fences, the tag)
    threads: DecodeThreads
    context: ModelContext  # the tokens a context holds, counted by the model's own tokenizer
    # What runs now (cpu/gate.py): a reply's prompt and first words are urgent, its rest waits for other
    # sessions' urgent work, and neither uses more threads than are free. None (--llm_threads): the
    # counts are used as they are.
    gate: CpuGate | None = None
    call_writer: CallWriter | None = None  # the model that writes the calls this one starts (llm/call_writer.py)

    @property
    def llm(self) -> Any:
        """One of the contexts, for what belongs to the model alone: its metadata and vocabulary."""
        return self.pool.contexts[0]

    def speakable_only(self, ids: Any, scores: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """A llama.cpp logits processor: the tokens of other scripts cannot be chosen."""
        scores[self.foreign_tokens] = -np.inf
        return scores


def _template(llm: Any) -> ChatTemplate | _PlainTranscript:
    source = llm.metadata.get("tokenizer.chat_template")
    if not source:
        return _PlainTranscript()

    def text(token: int) -> str:
        return str(llm.detokenize([token], special=True).decode("utf-8", errors="replace"))

    return ChatTemplate(source, text(llm.token_bos()), text(llm.token_eos()))


def _ends_generation(llm: Any, token: int) -> bool:
    """EOS or any other end-of-generation token of the model (chat models often have several)."""
    import llama_cpp

    vocab = getattr(getattr(llm, "_model", None), "vocab", None)  # what Llama's own loop asks, too
    if vocab is not None:
        return bool(llama_cpp.llama_vocab_is_eog(vocab, token))
    return bool(token == llm.token_eos())


def load_llama_cpp(settings: LLMSettings, context: LoadContext) -> LoadedLlama:
    try:
        from llama_cpp import Llama
    except ImportError as error:
        raise RuntimeError(MISSING) from error
    load_cpu_kernels()  # a build with every CPU variant has none loaded until then
    if context.device not in ("cpu", "auto"):
        raise RuntimeError(f"the llama-cpp backend runs on the CPU here, not {context.device!r}; use --device cpu")
    path = gguf_path(settings.model)
    if settings.gguf_type != "file":
        path = rewritten_gguf(path, settings.gguf_type)
    # Reading a prompt is compute-bound and comes when the other stages wait for it (the turn detector
    # has answered by then): one thread per physical core nearly halves it where cores are not hyperthreads.
    # So are a reply's first words, up to the TTS's first chunk; the rest decodes on half the CPUs
    # beside the TTS (DecodeThreads). --llm_threads sets all three.
    threads = DecodeThreads(batch=settings.threads or physical_cores(),
                            first_words=settings.threads or physical_cores(),
                            rest=settings.threads or half_the_cpus())
    count = settings.contexts or min(pool_size(context.num_pipelines).units, MAX_DEFAULT_CONTEXTS)
    n_ctx = settings.context_tokens or CONTEXT_TOKENS

    def new_context(model: Path) -> Any:
        return Llama(model_path=str(model), n_ctx=n_ctx, n_threads=threads.rest, n_threads_batch=threads.batch,
                     verbose=False)

    contexts = [new_context(path) for _ in range(count)]
    pool = ContextPool(contexts)
    llm = contexts[0]
    # --llm_threads is a number the user chose: kept as it is, busy neighbours or not.
    gate = None if settings.threads else cpu_gate.shared()
    writer_file = writer_path(settings.tool_call_model, gguf_path) if settings.tool_call_model else None
    writer = None if writer_file is None else load_call_writer(
        writer_file, llm, new_context, no_urgent_work(pool, gate), spare_threads_or_one(gate, threads.batch, pool))

    @functools.lru_cache(maxsize=TOKEN_COUNTS_CACHED)
    def count_tokens(text: str) -> int:
        return len(llm.tokenize(text.encode(), add_bos=False, special=False))

    pieces = [llm.detokenize([token]) for token in range(llm.n_vocab())]
    foreign = foreign_token_ids(pieces)
    return LoadedLlama(pool=pool, template=_template(llm), path=path, foreign_tokens=foreign,
                       call_tokens=call_start_tokens(pieces), markup_tokens=call_markup_tokens(pieces),
                       threads=threads, context=ModelContext(n_ctx, count_tokens), gate=gate, call_writer=writer)


class _Tokens:
    """A reply's tokens, whose source can change on the way (from free decoding to a call's grammar)."""

    def __init__(self, source: Iterator[int]) -> None:
        self._source = source

    def switch(self, source: Iterator[int]) -> None:
        close = getattr(self._source, "close", None)
        if close is not None:
            close()
        self._source = source

    def __iter__(self) -> Iterator[int]:
        while True:
            try:
                yield next(self._source)
            except StopIteration:
                return


class _ThreadCounts:
    """The thread counts of one context, set on it only when they change."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.now: tuple[int, int] | None = None

    def set(self, threads: int, batch: int) -> None:
        import llama_cpp

        if (threads, batch) != self.now:
            llama_cpp.llama_set_n_threads(self.llm.ctx, threads, batch)
            self.now = (threads, batch)


@registry.register("llm", "llama-cpp", load_llama_cpp)
class LlamaCppLM(LLMHandler):
    """Streams a reply from a context of the pool; a stale generation stops at its next token."""

    model: LoadedLlama

    def _sampling(self) -> dict[str, Any]:
        settings = self.settings
        penalty = {"repeat_penalty": settings.repetition_penalty}
        if settings.temperature <= 0:
            return {"temp": 0.0, "top_k": 1, **penalty}
        # top_k 0 and min_p 0: llama.cpp's own defaults (40, 0.05) would cut more than top_p asks.
        return {"temp": settings.temperature, "top_p": settings.top_p, "top_k": 0, "min_p": 0.0, **penalty}

    _context: int | None = None  # the context this unit's last reply decoded in (its KV cache)

    def _counts(self, urgent: bool) -> tuple[int, int]:
        """(decode, prompt) threads for the next step: the gate's share, or the fixed counts without one."""
        threads, gate = self.model.threads, self.model.gate
        wanted = threads.first_words if urgent else threads.rest
        if gate is None:
            return wanted, threads.batch
        if urgent:
            return gate.urgent_threads(wanted), gate.urgent_threads(threads.batch)
        share = gate.background_threads(wanted)
        return share, min(threads.batch, share)

    def prefill(self, request: GenerateResponseRequest) -> None:
        """Read the prompt the words heard so far would make, to its end, into a free context (the unit's
        own if it is free), a few tokens at a time while nothing else wants the CPU.

        To its end, the assistant's header included: the last interim words are mostly the pause's own
        (10 of 11 turns of `bench latency`), and then the reply reads at most one token of
        its prompt. Where the words change, llama.cpp reads on from the first token that differs, as it would
        have anyway."""
        lm = self.model
        prompt = prompt_for(lm.template, request, self.settings, lm.context, calls_ruled_out=True)
        # Marked as background work: the next reply reads less for it, so the call writer's read ahead waits.
        running = lm.gate.background() if lm.gate is not None else nullcontext()
        with lm.pool.checkout_if_free(self._context) as free, running:
            if free is None:
                return
            index, llm = free
            self._context = index
            tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
            counts = _ThreadCounts(llm)

            def still_wanted() -> bool:
                if not self.queue_in.empty():
                    return False  # the request itself: it reads the rest
                threads = lm.threads.batch if lm.gate is None else lm.gate.spare_threads(lm.threads.batch)
                if threads:
                    counts.set(min(threads, lm.threads.rest), threads)
                return threads > 0

            # A call's writer reads the same prompt (its tools) into its own context, once this read ahead is
            # over, whenever no urgent work of ours runs, between turns too (llm/idle_read.py).
            if lm.call_writer is not None and calls_native_tools(lm.template, request):
                lm.call_writer.read_ahead(tokens)
            read_ahead(llm, tokens, still_wanted, PREFILL_STEP)

    def _call_rules(self, request: GenerateResponseRequest, may_call: bool) -> list[LogitsProcessor]:
        """Where the reply may call a tool, its first token decides whether it does (by the threshold, if
        set); the answer to a tool's result, whose prompt keeps the tools, never does."""
        lm, threshold = self.model, self.settings.tool_call_threshold
        if may_call:
            return [first_token_decides(lm.call_tokens, threshold)] if threshold is not None else []
        return [no_call(lm.markup_tokens)] if knows_tools(lm.template) and offered_tools(request) else []

    def _call_writer(self, llm: Any, counts: _ThreadCounts, writing: ExitStack,
                     tokens: list[int]) -> tuple[Any, _ThreadCounts]:
        """The context that writes a call begun after ``tokens``, and its thread counts: the call writer's,
        held until the reply ends; without a writer, or one that is busy or has not read the prompt yet, the
        reply's own."""
        writer = self.model.call_writer
        context = None if writer is None else writer.ready_context(tokens, writing)
        if context is None:
            return llm, counts
        counts = _ThreadCounts(context)
        counts.set(*self._counts(urgent=True))
        return context, counts

    def _call_tokens(self, llm: Any, tokens: list[int], grammar: Any,
                     processors: Sequence[LogitsProcessor]) -> Iterator[int]:
        """A call's tokens after ``tokens``, held to ``grammar``: greedy decoding asks the grammar about the model's
        choice alone first (llm/grammar_first.py), sampling goes through llama.cpp's own sampler."""
        settings = self.settings
        if settings.temperature <= 0 and settings.repetition_penalty == 1.0:
            return grammar_first_tokens(llm, tokens, grammar, processors)
        return iter(llm.generate(tokens, reset=True, logits_processor=list(processors) or None, grammar=grammar,
                                 **self._sampling()))

    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        lm = self.model
        text = prompt_for(lm.template, request, self.settings, lm.context, calls_ruled_out=True)
        limit = request.max_output_tokens or self.settings.max_new_tokens
        generated: list[int] = []
        prompt: list[int] = []
        cached = 0  # of the prompt, the tokens the context held and did not read again
        ended = False

        def texts(llm: Any, urgent: ExitStack, writing: ExitStack) -> Iterator[str]:
            from llama_cpp import LlamaGrammar

            nonlocal ended
            counts = _ThreadCounts(llm)
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character may span tokens
            # reset=True still reuses the KV cache for the prompt prefix the context saw last.
            speakable = [lm.speakable_only] if self.speaks_in_latin_script(request) else []
            calling = self._call_rules(request, grammars is not None)
            # A reply no voice speaks is urgent to its end: no TTS waits beside it, its reader waits for it.
            said, speaks, urgent_phase = "", "audio" in request.output_modalities, True
            counts.set(*self._counts(urgent=True))
            held = grammars  # until the reply starts a call, then None: it is held from there on
            tokens = _Tokens(llm.generate(prompt, reset=True, logits_processor=speakable + calling or None,
                                          **self._sampling()))
            for token in tokens:
                end = _ends_generation(llm, token)
                piece = "" if end else decoder.decode(llm.detokenize([token]))
                start = call_starts(said, piece) if held is not None and piece else None
                if start is not None and held is not None:
                    # The call goes on under its grammar, from the same context (its KV cache is kept): a bare
                    # call's opening brace is drawn again under it, a tagged call's tag is kept.
                    if start == "tagged":
                        generated.append(token)
                        said += piece
                        yield piece
                    grammar = LlamaGrammar.from_string(held.tagged if start == "tagged" else held.bare,
                                                       verbose=False)
                    held = None
                    writer, counts = self._call_writer(llm, counts, writing, prompt + generated)
                    tokens.switch(self._call_tokens(writer, prompt + generated, grammar, speakable))
                    continue
                generated.append(token)  # the end token too: it was generated, and counts
                if end:
                    ended = True
                    return
                if piece:
                    said += piece
                    if speaks and urgent_phase and first_chunk_ready(said, self.settings.first_chunk_words):
                        urgent_phase = False
                        urgent.close()  # the TTS starts on these words: the rest can wait for others
                    yield piece
                if len(generated) >= limit or self.cancel_scope.is_stale(request.generation):
                    return
                counts.set(*self._counts(urgent=urgent_phase))

        # Tools in the template's JSON format: a call, once begun, is decoded under its tools' grammar.
        grammars = call_grammars(offered_tools(request)) if calls_native_tools(lm.template, request) else None
        with lm.pool.checkout(self._context) as (index, llm), ExitStack() as urgent, ExitStack() as writing:
            self._context = index
            prompt = llm.tokenize(text.encode(), add_bos=False, special=True)
            # At least one token is read again, for the logits the first one is drawn from.
            cached = min(cut_dropped_block(llm, prompt), len(prompt) - 1)
            if lm.gate is not None:
                urgent.enter_context(lm.gate.urgent(lm.threads.batch))
            yield from split_tool_calls(request, texts(llm, urgent, writing))
        yield TokenUsage(request.response_id, request.generation, len(prompt), len(generated), cached)
        if not ended and len(generated) >= limit:
            yield Terminal("incomplete", reason="max_output_tokens")
