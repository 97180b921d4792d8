"""Cut a stream of 16 kHz samples into fixed 512-sample chunks for the VAD."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from speech_to_speech.pipeline.messages import FloatAudio

VAD_CHUNK = 512


class Chunker:
    def __init__(self, size: int = VAD_CHUNK) -> None:
        self.size = size
        self._pending = np.zeros(0, dtype=np.float32)
        self._offset = 0  # samples handed out so far

    def push(self, samples: FloatAudio) -> Iterator[tuple[FloatAudio, int]]:
        """Yield (chunk, offset of its first sample) for every full chunk now available."""
        data = np.concatenate([self._pending, np.asarray(samples, dtype=np.float32)])
        whole = len(data) // self.size * self.size
        for start in range(0, whole, self.size):
            chunk = data[start : start + self.size].copy()
            chunk.flags.writeable = False
            yield chunk, self._offset
            self._offset += self.size
        self._pending = data[whole:]

    def reset(self) -> None:
        self._pending = np.zeros(0, dtype=np.float32)
        self._offset = 0
