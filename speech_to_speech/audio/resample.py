"""Stateful resampling (soxr) and sample-format conversion."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import soxr


def to_float32(audio: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    if audio.dtype == np.int16:
        return audio.astype(np.float32) / 32768.0
    return np.asarray(audio, dtype=np.float32)


def to_int16(audio: npt.NDArray[Any]) -> npt.NDArray[np.int16]:
    if audio.dtype == np.int16:
        return audio
    return (np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0) * 32767.0).astype(np.int16)


class StreamResampler:
    """Resamples a stream chunk by chunk without clicks at chunk borders."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._stream = soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32") if in_rate != out_rate else None

    def process(self, audio: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
        samples = to_float32(audio)
        if self._stream is None:
            return samples
        return np.asarray(self._stream.resample_chunk(samples), dtype=np.float32)

    @property
    def held(self) -> int:
        """Output samples owed for input already given: what the next call returns first."""
        return 0 if self._stream is None else round(self._stream.delay())

    def flush(self) -> npt.NDArray[np.float32]:
        if self._stream is None:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self._stream.resample_chunk(np.zeros(0, np.float32), last=True), dtype=np.float32)


def resample(audio: npt.NDArray[Any], in_rate: int, out_rate: int) -> npt.NDArray[np.float32]:
    """One-shot resampling of a whole signal."""
    samples = to_float32(audio)
    if in_rate == out_rate:
        return samples
    return np.asarray(soxr.resample(samples, in_rate, out_rate), dtype=np.float32)
