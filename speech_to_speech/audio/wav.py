"""WAV files in and out: any rate and channel count in, mono float32 out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.io import wavfile

from speech_to_speech.audio.resample import resample, to_int16


def read_wav(path: str | Path, rate: int | None = None) -> tuple[npt.NDArray[np.float32], int]:
    """Read a WAV as mono float32 in [-1, 1], resampled to ``rate`` when given."""
    file_rate, data = wavfile.read(str(path))
    if data.dtype == np.int16:
        samples = data.astype(np.float32) / 32768.0
    elif data.dtype == np.int32:
        samples = data.astype(np.float32) / 2147483648.0
    elif data.dtype == np.uint8:
        samples = (data.astype(np.float32) - 128.0) / 128.0
    else:
        samples = data.astype(np.float32)
    if samples.ndim == 2:
        samples = samples.mean(axis=1)
    if rate is not None and rate != file_rate:
        return resample(samples, file_rate, rate), rate
    return samples, int(file_rate)


def write_wav(path: str | Path, samples: npt.NDArray[Any], rate: int) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    wavfile.write(str(path), rate, to_int16(np.asarray(samples)))
