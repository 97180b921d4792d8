"""Cut a stream of 16 kHz samples into fixed 512-sample chunks for the VAD."""

from __future__ import annotations

import numpy as np

from speech_to_speech.audio.samples import FloatAudio

VAD_CHUNK = 512


class Chunker:
    def __init__(self, size: int = VAD_CHUNK) -> None:
        self.size = size
        self._pending = np.zeros(0, dtype=np.float32)
        self._offset = 0  # samples handed out so far

    def push(self, samples: FloatAudio) -> list[tuple[FloatAudio, int]]:
        """(chunk, offset of its first sample) for every full chunk now available.

        A list, not a generator: the state moves on even if the caller stops early.
        """
        data = np.concatenate([self._pending, np.asarray(samples, dtype=np.float32)])
        whole = len(data) // self.size * self.size
        out = []
        for start in range(0, whole, self.size):
            chunk = data[start : start + self.size].copy()
            chunk.flags.writeable = False
            out.append((chunk, self._offset))
            self._offset += self.size
        self._pending = data[whole:]
        return out

    def flush(self) -> list[tuple[FloatAudio, int]]:
        """Hand out the samples still waiting, zero-padded to one whole chunk.

        A manual commit must include every sample appended before it, not
        only the whole chunks; the padding is silence the VAD can score.
        """
        if not len(self._pending):
            return []
        return self.push(np.zeros(self.size - len(self._pending), dtype=np.float32))

    def discard(self) -> None:
        """Drop the waiting samples; they still count in the stream's position."""
        self._offset += len(self._pending)
        self._pending = np.zeros(0, dtype=np.float32)

    def reset(self) -> None:
        self._pending = np.zeros(0, dtype=np.float32)
        self._offset = 0
