"""A prompt read into a context in the process's idle time: how the call writer comes to hold a session's tools.

The call writer (llm/call_writer.py) writes a session's call only where its
KV cache already holds the session's prompt, all but a few hundred tokens of
it: the system prompt and the tools, ~1,100 tokens for bench tools' five
(~12 s for the 1.5B in large batches on two quiet cores). It used to read
them in the unit's prefill, after the main model, in what the CPU gate called
spare, and only until the next queue item came: each partial transcript
stopped it, nothing resumed it between turns, and on a busy machine it held
174 of them after three minutes of spoken bench tools (every call the 0.5B's).

An :class:`IdleReader` reads the newest prompt it was asked for on a thread of
its own, a step of tokens at a time, whenever ``idle()`` says so, for as long
as it takes. For the call writer that is whenever no urgent work of ours runs (a
prompt, a reply's first words, an STT pass a user waits for) and neither the
main model's own read ahead nor an interim STT pass does (:func:`no_urgent_work`):
beside a reply past its first words too, on one thread, as a reply's voice
sets its pace, and otherwise on the threads that neighbours leave, one where
they leave none, since reading then slows the neighbours and not our users.
Waiting for all of our work instead (replies to their end) left it ~3 s a
request of spoken bench tools on a busy machine, against ~8 s: 324 of the
tools' ~1,090 tokens read after eight requests, against 804 (in steps of
six). Once such work starts, the step in flight ends first and the reader
looks again every ``poll_s``; it starts again only after ``poll_s`` of
idleness, so the moment between a prefill and the request queued behind it
is not taken for idle time.
"""

from __future__ import annotations

import atexit
import enum
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from speech_to_speech.cpu.gate import CpuGate
from speech_to_speech.llm.llama_contexts import ContextPool
from speech_to_speech.llm.llama_kv import cut_dropped_block

log = logging.getLogger(__name__)

POLL_S = 0.05  # how often a reader kept from its work by ours looks again
LOGGED_FROM = 256  # a read this long is a prompt's tools, not a turn's words: it is worth a line in the log


class _Step(enum.Enum):
    READ = "read"  # a step of tokens read
    HELD = "held"  # the context holds the whole prompt
    WAIT = "wait"  # our own work runs, or the context is out (a call is being written in it)


class IdleReader:
    """Reads the newest prompt :meth:`want` was given into a context of ``pool`` while ``idle()`` says so.

    ``prepare`` is called on the context before each step (it sets the step's threads); ``step`` tokens are
    read between two looks at ``idle``.
    """

    def __init__(self, name: str, pool: ContextPool, idle: Callable[[], bool], prepare: Callable[[Any], None],
                 step: int, poll_s: float = POLL_S) -> None:
        self.name = name
        self._pool = pool
        self._idle = idle
        self._prepare = prepare
        self._step = step
        self._poll_s = poll_s
        self._wanted: tuple[int, ...] = ()
        self._caught_up = True  # the context held all of ``_wanted`` when last looked at
        self._asked_at = 0.0  # when the reader was last asked for a prompt while it was caught up
        self._read = 0  # tokens read since then
        self._closed = False
        self._changed = threading.Condition()
        self._stepping = threading.Lock()  # held through each step: paused() waits for the one in flight
        self._thread = threading.Thread(target=self._run, name=f"idle-read {name}", daemon=True)
        self._thread.start()
        atexit.register(self.close)  # a step must not be running while the interpreter frees the context

    def want(self, tokens: Sequence[int]) -> None:
        """Read ``tokens`` into the context in idle time, instead of what was wanted before (from where the
        context stops holding them)."""
        with self._changed:
            if self._caught_up:
                self._asked_at, self._read = time.monotonic(), 0
            self._wanted = tuple(tokens)
            self._caught_up = False
            self._changed.notify_all()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No step runs inside the block; a step in flight ends first (it is short: ``step`` tokens)."""
        with self._stepping:
            yield

    def wait_caught_up(self, timeout: float | None = None) -> bool:
        """Wait until nothing is left to read of what was wanted (the context holds it, or a read of it failed
        and was logged), or the reader is closed; whether nothing is left."""
        with self._changed:
            self._changed.wait_for(lambda: self._caught_up or self._closed, timeout)
            return self._caught_up

    def close(self) -> None:
        """Stop reading (a step in flight ends first)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        atexit.unregister(self.close)

    def _run(self) -> None:
        quiet = False  # idle when last looked at, ``poll_s`` ago
        while True:
            with self._changed:
                if self._caught_up:
                    quiet = False  # what it saw before it waited says nothing of the time it is woken
                self._changed.wait_for(lambda: self._closed or not self._caught_up)
                if self._closed:
                    return
                wanted = self._wanted
            idle = self._idle()
            try:
                step = self._read_step(wanted) if idle and quiet else _Step.WAIT
            except Exception:  # the reader must outlive a prompt it could not read
                log.exception("the %s could not read a prompt ahead; it reads the next one it is asked for", self.name)
                self._settle(wanted, held=False)
                continue
            quiet = idle
            if step is _Step.HELD:
                self._settle(wanted, held=True)
            elif step is _Step.WAIT:
                with self._changed:
                    self._changed.wait(self._poll_s)  # closing wakes it sooner

    def _read_step(self, wanted: tuple[int, ...]) -> _Step:
        with self._stepping, self._pool.checkout_if_free() as free:
            # Looked at again under the lock: once paused() has returned, no step starts while work of ours runs.
            if free is None or not self._idle():
                return _Step.WAIT
            _, llm = free
            held = cut_dropped_block(llm, wanted)
            if held >= len(wanted):
                return _Step.HELD
            batch = list(wanted[held: held + self._step])
            self._prepare(llm)
            llm.n_tokens = held  # eval drops the cache past here before it reads on
            llm.eval(batch)
        with self._changed:
            self._read += len(batch)
        return _Step.READ

    def _settle(self, wanted: tuple[int, ...], held: bool) -> None:
        """Nothing is left to read of ``wanted``: the context holds it (or it failed, and is given up)."""
        with self._changed:
            if self._wanted is not wanted:
                return  # asked for another prompt meanwhile: read on towards it
            self._caught_up = True
            self._changed.notify_all()
            read, seconds = self._read, time.monotonic() - self._asked_at
        if held and read >= LOGGED_FROM:
            log.info("the %s holds the prompt's %d tokens: read %d of them in idle time, %.1f s after it was asked",
                     self.name, len(wanted), read, seconds)


def no_urgent_work(pool: ContextPool, gate: CpuGate | None) -> Callable[[], bool]:
    """Whether a read ahead may step now: ``gate`` holds no urgent job (a prompt, a reply's first words, an STT
    pass a user waits for) and no marked background job (the main model's own read ahead, an interim STT
    pass). A reply past its first words, whose pace its voice sets, goes on beside it. Without a gate
    (--llm_threads), only while no context of the main model's ``pool`` is out."""
    return (lambda: pool.idle) if gate is None else (lambda: gate.idle)


def step_threads(gate: CpuGate | None, most: int, pool: ContextPool) -> int:
    """The threads of a read ahead's step: beside a reply of ours (a context of ``pool`` is out), one; else what
    neighbours leave of ``most``, and one where they leave none. ``most`` as it is without a gate (--llm_threads)."""
    if gate is None:
        return most
    return max(1, gate.spare_threads(most)) if pool.idle else 1


def spare_threads_or_one(gate: CpuGate | None, most: int, pool: ContextPool) -> Callable[[Any], None]:
    """What sets a llama.cpp context's threads to :func:`step_threads` before each step."""
    def prepare(context: Any) -> None:
        import llama_cpp

        threads = step_threads(gate, most, pool)
        llama_cpp.llama_set_n_threads(context.ctx, threads, threads)

    return prepare
