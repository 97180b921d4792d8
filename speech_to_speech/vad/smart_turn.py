"""Smart Turn v3: does an utterance *sound* finished? An audio classifier, run by onnxruntime.

The model (BSD-2-Clause, a Whisper-tiny encoder with a small head, ~8.7 MB)
scores the last 8 s of a turn at 16 kHz, given as Whisper log-mel features,
and returns the probability that the speaker has finished. Its weights come
inside the ``pipecat-ai`` wheel; we take only the file (the package is
installed with ``--no-deps`` and never imported), so ``make serve`` needs no
network. ``--smart_turn_model`` points at another copy of the file.

The features are faster-whisper's own log-mel extractor (the same math as
Whisper's), over an 8 s window instead of 30 s, after the zero-mean,
unit-variance normalisation the model was trained with.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16000  # the rate Smart Turn was trained on
WINDOW_SECONDS = 8
WINDOW_SAMPLES = WINDOW_SECONDS * SAMPLE_RATE
FRAMES = WINDOW_SAMPLES // 160  # Whisper's 10 ms hop: 800 frames
MODEL_FILE = "smart-turn-v3.2-cpu.onnx"
# Where the pipecat-ai wheel keeps it, relative to its package folder.
_PIPECAT_DATA = Path("audio") / "turn" / "smart_turn" / "data"
_NORMALISE_EPSILON = 1e-7


def packaged_model_path() -> Path | None:
    """The weights inside an installed ``pipecat-ai`` wheel, found without importing it; None if absent."""
    try:
        spec = importlib.util.find_spec("pipecat")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / _PIPECAT_DATA / MODEL_FILE
        if path.is_file():
            return path
    return None


class WhisperFeatures:
    """Whisper log-mel features of the last 8 s of audio (left-padded with silence), shape (80, 800)."""

    def __init__(self) -> None:
        from faster_whisper.feature_extractor import FeatureExtractor

        self._extract = FeatureExtractor(feature_size=80, sampling_rate=SAMPLE_RATE, chunk_length=WINDOW_SECONDS)

    def __call__(self, samples: npt.ArrayLike) -> npt.NDArray[np.float32]:
        audio = np.asarray(samples, dtype=np.float32)[-WINDOW_SAMPLES:]
        window = np.zeros(WINDOW_SAMPLES, dtype=np.float32)
        window[WINDOW_SAMPLES - len(audio):] = audio
        # Normalised over the whole window, padding included, as the model saw in training.
        window = (window - window.mean()) / np.sqrt(window.var() + _NORMALISE_EPSILON)
        # No extra padding: 128,000 samples give 801 frames, of which Whisper drops the last.
        features = self._extract(window, padding=0)
        return np.ascontiguousarray(features[:, :FRAMES], dtype=np.float32)


class SmartTurnModel:
    """The shared ONNX session (``run`` is thread-safe); ``probability`` is pure."""

    def __init__(self, path: Path) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # One decision is ~50 ms on one core; more threads would take cores from STT and the LLM.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        self.path = path
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.features = WhisperFeatures()
        self.probability(np.zeros(SAMPLE_RATE, dtype=np.float32))  # pay lazy allocations at startup

    def probability(self, samples: npt.ArrayLike) -> float:
        """Probability that the speech in ``samples`` (16 kHz, its end last) is a finished turn."""
        features = self.features(samples)[np.newaxis]
        outputs: list[Any] = self.session.run(None, {"input_features": features})
        return float(np.asarray(outputs[0]).reshape(-1)[0])
