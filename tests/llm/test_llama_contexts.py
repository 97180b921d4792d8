"""The pool of llama.cpp contexts (a reply gets its session's own when it is free, another when not), and
reading a prompt ahead into one."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.llm.llama_contexts import ContextPool, read_ahead


def test_a_free_preferred_context_is_the_one_given() -> None:
    pool = ContextPool(["a", "b", "c"])
    with pool.checkout(2) as (index, context):
        assert (index, context) == (2, "c")
        with pool.checkout(2) as (other, _):
            assert other != 2  # taken: another one, rather than a wait


def test_with_every_context_out_a_reply_waits_for_one() -> None:
    pool = ContextPool(["only"])
    got: list[int] = []
    with pool.checkout() as (index, _):
        waiter = threading.Thread(target=lambda: got.append(pool.checkout().__enter__()[0]))
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive() and got == []
    waiter.join(5)
    assert got == [index]


def test_a_prefill_takes_a_context_only_if_one_is_free() -> None:
    pool = ContextPool(["only"])
    with pool.checkout_if_free(0) as free:
        assert free == (0, "only")
        with pool.checkout_if_free(0) as none:
            assert none is None
    with pool.checkout() as (index, _):  # and it gave it back
        assert index == 0


def test_a_pool_needs_a_context() -> None:
    with pytest.raises(ValueError, match="at least one"):
        ContextPool([])


@given(st.integers(1, 5), st.lists(st.tuples(st.booleans(), st.integers(0, 6)), max_size=30))
def test_no_context_is_ever_out_twice(size: int, steps: list[tuple[bool, int]]) -> None:
    """Checkouts and returns in any order: what is out is distinct, and everything returns."""
    pool = ContextPool(list(range(size)))
    held: list[tuple[object, int]] = []
    for take, preferred in steps:
        assert pool.idle == (not held)  # idle: nothing reads or decodes in any context
        if take and len(held) < size:
            block = pool.checkout(preferred if preferred < size else None)
            index, _ = block.__enter__()
            assert index not in [i for _, i in held]
            assert index == preferred or preferred >= size or preferred in [i for _, i in held]
            held.append((block, index))
        elif held:
            block, _ = held.pop(0)
            block.__exit__(None, None, None)  # type: ignore[attr-defined]
    for block, _ in held:
        block.__exit__(None, None, None)  # type: ignore[attr-defined]
    with pool.checkout() as (index, _):
        assert 0 <= index < size


class FakeLlama:
    """What read_ahead uses of llama_cpp.Llama: the cached tokens and eval."""

    def __init__(self, cached: list[int]) -> None:
        self.input_ids = np.array(cached + [0] * 64)
        self.n_tokens = len(cached)
        self.reads: list[list[int]] = []

    def eval(self, tokens: list[int]) -> None:
        self.reads.append(list(tokens))
        self.input_ids[self.n_tokens: self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)


def test_reading_ahead_keeps_the_cached_prefix_and_reads_the_rest_in_steps() -> None:
    llm = FakeLlama([1, 2, 3, 9, 9])
    assert read_ahead(llm, [1, 2, 3, 4, 5, 6, 7, 8], lambda: True, step=2) == 5
    assert llm.reads == [[4, 5], [6, 7], [8]]  # from where the cache and the prompt part
    assert list(llm.input_ids[: llm.n_tokens]) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert read_ahead(llm, [1, 2, 3, 4, 5], lambda: True, step=2) == 0  # all of it is cached already


def test_reading_ahead_stops_when_it_is_no_longer_wanted() -> None:
    llm = FakeLlama([])
    asked = iter([True, True, False])
    assert read_ahead(llm, list(range(1, 20)), lambda: next(asked), step=4) == 8
    assert llm.n_tokens == 8


@given(st.lists(st.integers(1, 5), max_size=12), st.lists(st.integers(1, 5), max_size=12), st.integers(1, 5))
def test_after_reading_ahead_the_cache_begins_with_the_prompt(cached: list[int], prompt: list[int], step: int) -> None:
    llm = FakeLlama(cached)
    read = read_ahead(llm, prompt, lambda: True, step)
    assert list(llm.input_ids[: len(prompt)]) == prompt and llm.n_tokens >= len(prompt)
    assert read == 0 or llm.n_tokens == len(prompt)  # what it read ends the cache
