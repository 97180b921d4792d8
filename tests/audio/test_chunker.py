from __future__ import annotations

import numpy as np
import pytest

from speech_to_speech.audio.chunker import VAD_CHUNK, Chunker


def test_any_push_sizes_give_whole_chunks_in_order() -> None:
    rng = np.random.default_rng(0)
    signal = rng.standard_normal(10_000).astype(np.float32)
    chunker = Chunker()
    out = []
    start = 0
    for size in (1, 511, 1, 700, 3000, 0, 5787):
        out += chunker.push(signal[start : start + size])
        start += size
    assert start == len(signal)
    assert all(len(chunk) == VAD_CHUNK for chunk, _ in out)
    assert [offset for _, offset in out] == [n * VAD_CHUNK for n in range(len(out))]
    joined = np.concatenate([chunk for chunk, _ in out])
    assert len(joined) == len(signal) // VAD_CHUNK * VAD_CHUNK
    np.testing.assert_array_equal(joined, signal[: len(joined)])


def test_chunks_are_read_only() -> None:
    ((chunk, _),) = Chunker().push(np.ones(VAD_CHUNK, np.float32))
    with pytest.raises(ValueError):
        chunk[0] = 0.0


def test_flush_pads_the_waiting_samples_to_one_chunk() -> None:
    chunker = Chunker()
    chunker.push(np.ones(700, np.float32))
    ((chunk, offset),) = chunker.flush()
    assert offset == VAD_CHUNK
    np.testing.assert_array_equal(chunk[:188], 1.0)
    np.testing.assert_array_equal(chunk[188:], 0.0)
    assert chunker.flush() == []


def test_discard_drops_waiting_samples_but_keeps_the_position() -> None:
    chunker = Chunker()
    chunker.push(np.ones(700, np.float32))
    chunker.discard()
    ((chunk, offset),) = chunker.push(np.zeros(VAD_CHUNK, np.float32))
    assert offset == 700
    np.testing.assert_array_equal(chunk, 0.0)


def test_reset_restarts_the_stream() -> None:
    chunker = Chunker()
    chunker.push(np.ones(1000, np.float32))
    chunker.reset()
    ((chunk, offset),) = chunker.push(np.zeros(VAD_CHUNK, np.float32))
    assert offset == 0
    np.testing.assert_array_equal(chunk, 0.0)
