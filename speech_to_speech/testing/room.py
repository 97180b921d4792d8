"""A simulated acoustic path from a speaker to a microphone, for tests and benchmarks of echo cancellation.

What the speaker plays reaches the microphone late (the device and the air),
quieter, and smeared by the room's reverberation (a direct path and an
exponentially decaying random tail), over the room's own noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.signal import fftconvolve

from speech_to_speech.audio.rates import PIPELINE_RATE


@dataclass(frozen=True)
class Room:
    delay_ms: int = 150  # speaker to microphone, the client's buffer included
    gain: float = 0.5  # the direct path's amplitude
    tail_ms: int = 200  # how long the reverberation lasts
    tail_level: float = 0.2  # the tail's energy against the direct path's
    noise_dbfs: float = -66.0
    rate: int = PIPELINE_RATE
    seed: int = 0

    def impulse_response(self) -> np.ndarray:
        length = max(1, self.tail_ms * self.rate // 1000)
        rng = np.random.default_rng(self.seed)
        decay = np.exp(-np.arange(length) / (length / 6.0))  # about -52 dB by the tail's end
        tail = rng.standard_normal(length) * decay
        tail *= self.gain * np.sqrt(self.tail_level) / np.sqrt(np.sum(tail**2))
        tail[0] = self.gain
        return tail.astype(np.float32)

    def echo_of(self, played: np.ndarray) -> np.ndarray:
        """What the microphone hears of ``played`` (the same length: sound past its end is cut off)."""
        delay = self.delay_ms * self.rate // 1000
        wet = fftconvolve(np.asarray(played, np.float32), self.impulse_response())[: max(0, len(played) - delay)]
        return np.concatenate([np.zeros(min(delay, len(played)), np.float32), wet]).astype(np.float32)

    def noise(self, samples: int) -> np.ndarray:
        level = 10 ** (self.noise_dbfs / 20)
        return (np.random.default_rng(self.seed + 1).standard_normal(samples) * level).astype(np.float32)
