"""A session's noise reduction (``audio.input.noise_reduction``): its microphone audio, cleaned for the VAD.

``near_field`` and ``far_field`` both run the DTLN model (audio/denoise.py); a
close microphone has little noise to take away and its speech must lose
nothing, so ``near_field`` keeps the microphone's own signal mixed back in at
``NEAR_FIELD_DRY`` (-10 dB), ``far_field`` hears the model's output alone.
The model is loaded once per process, on the first session that asks; each
session's stream keeps its own state, started afresh when the type changes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.denoise import Delay, Denoiser, DenoiserFactory, WeightsMissing, weights
from speech_to_speech.pipeline.session_config import RuntimeConfig

MODEL = "dtln"
NEAR_FIELD_DRY = 0.3
_factory: DenoiserFactory | None = None


def unavailable() -> str | None:
    """Why a session cannot have noise reduction on this server (None: it can)."""
    try:
        weights(MODEL)
    except WeightsMissing as missing:
        return str(missing)
    return None


def _denoiser() -> Denoiser:
    global _factory
    if _factory is None:
        _factory = DenoiserFactory(MODEL)
    return _factory.new()


class SessionNoise:
    """Cleans one session's 16 kHz microphone audio while its config asks for it (runs on the event loop)."""

    def __init__(self, config: Callable[[], RuntimeConfig]) -> None:
        self._config = config
        self._kind: str | None = None
        self._denoiser: Denoiser | None = None
        self._dry = Delay(0)

    def heard(self, samples_16k: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        kind = self._config().noise_reduction
        if kind != self._kind:
            self._kind, self._denoiser = kind, (_denoiser() if kind is not None else None)
            self._dry = Delay(self._denoiser.block if self._denoiser is not None else 0)
        if self._denoiser is None:
            return samples_16k
        cleaned = self._denoiser.process(samples_16k)
        if kind == "near_field":
            # The microphone's own signal, as late as the model's output, mixed back in.
            dry = self._dry.process(samples_16k)
            cleaned = (cleaned + NEAR_FIELD_DRY * dry).astype(np.float32)
        return cleaned
