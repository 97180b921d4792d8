"""Several llama.cpp contexts over one model, so that two sessions' replies decode side by side.

A llama.cpp context holds one sequence. With one context for the whole
server, a session whose user has just stopped speaking waited for the other
session's whole reply (up to 96 tokens, seconds) before its own prompt was
read: "two at once" answered the slower user 6.4 s late. Each context here
costs its KV cache and compute buffers (~150 MB for the packaged models at
4096 tokens); the weights are mapped from the file once and shared.

A reply checks a context out for its duration, preferring the one its
session used last: that context's KV cache still holds the session's
conversation, which llama.cpp then does not read again. With as many
contexts as sessions, each session keeps its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from speech_to_speech.llm.llama_kv import cut_dropped_block


class ContextPool:
    def __init__(self, contexts: Sequence[Any]) -> None:
        if not contexts:
            raise ValueError("a context pool needs at least one context")
        self.contexts = tuple(contexts)
        self._free = list(range(len(self.contexts)))
        self._changed = threading.Condition()

    def __len__(self) -> int:
        return len(self.contexts)

    @property
    def idle(self) -> bool:
        """No context is checked out: nothing reads a prompt or decodes in any of them."""
        with self._changed:
            return len(self._free) == len(self.contexts)

    @contextmanager
    def checkout(self, preferred: int | None = None) -> Iterator[tuple[int, Any]]:
        """A free context (``preferred`` if it is free), as (its index, the context), until the block ends;
        with every context out, it waits for one."""
        index = self._take(preferred, wait=True)
        assert index is not None
        try:
            yield index, self.contexts[index]
        finally:
            self._give_back(index)

    @contextmanager
    def checkout_if_free(self, preferred: int | None = None) -> Iterator[tuple[int, Any] | None]:
        """As :meth:`checkout`, but None at once when every context is out."""
        index = self._take(preferred, wait=False)
        try:
            yield None if index is None else (index, self.contexts[index])
        finally:
            if index is not None:
                self._give_back(index)

    def _take(self, preferred: int | None, wait: bool) -> int | None:
        with self._changed:
            if not wait and not self._free:
                return None
            self._changed.wait_for(lambda: bool(self._free))
            index = preferred if preferred in self._free else self._free[0]
            self._free.remove(index)
            return index

    def _give_back(self, index: int) -> None:
        with self._changed:
            self._free.append(index)
            self._changed.notify()

def read_ahead(llm: Any, tokens: list[int], still_wanted: Callable[[], bool], step: int) -> int:
    """Read ``tokens`` into ``llm``'s KV cache past the prefix it holds already, ``step`` at a time while
    ``still_wanted``; returns how many were read. The next ``generate`` of a prompt that begins with them
    reads only what follows (llama-cpp-python keeps the longest matching prefix; a block a trim dropped
    from the conversation is cut out of the cache first, llm/llama_kv.py)."""
    held = cut_dropped_block(llm, tokens)
    read = 0
    for start in range(held, len(tokens), step):
        if not still_wanted():
            break
        batch = tokens[start: start + step]
        llm.n_tokens = start  # eval drops the cache past here before it reads on
        llm.eval(batch)
        read += len(batch)
    return read
