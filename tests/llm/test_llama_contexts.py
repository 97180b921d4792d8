"""The pool of llama.cpp contexts: a reply gets its session's own context when it is free, another when not."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.llm.llama_contexts import ContextPool


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


def test_a_pool_needs_a_context() -> None:
    with pytest.raises(ValueError, match="at least one"):
        ContextPool([])


@given(st.integers(1, 5), st.lists(st.tuples(st.booleans(), st.integers(0, 6)), max_size=30))
def test_no_context_is_ever_out_twice(size: int, steps: list[tuple[bool, int]]) -> None:
    """Checkouts and returns in any order: what is out is distinct, and everything returns."""
    pool = ContextPool(list(range(size)))
    held: list[tuple[object, int]] = []
    for take, preferred in steps:
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
