"""Silero VAD: the ONNX model shipped in the ``silero-vad`` package, run by onnxruntime.

The package's own wrapper needs torch; the model itself needs only
onnxruntime, so we drive it directly. One InferenceSession is shared by every
unit (``run`` is thread-safe); the recurrent state and the 64-sample context
of each session live in its handler.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech import registry
from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import LoadContext, VADSettings
from speech_to_speech.vad.base import VADHandler

# The model scores 512 new samples but must also see the 64 before them: with
# no context its probabilities on speech stay near zero.
CONTEXT = 64
_STATE_SHAPE = (2, 1, 128)


def packaged_model_path() -> Path:
    """``silero_vad.onnx`` inside the installed package, found without importing it (that imports torch)."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the silero-vad package is not installed (pip install silero-vad)")
    for location in spec.submodule_search_locations:
        path = Path(location) / "data" / "silero_vad.onnx"
        if path.is_file():
            return path
    raise RuntimeError("silero-vad is installed but ships no data/silero_vad.onnx")


class SileroModel:
    """The shared ONNX session; ``score`` is pure, state goes in and comes out."""

    def __init__(self, path: Path) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # One 32 ms chunk takes well under a millisecond: more threads only add contention.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._sr = np.array(PIPELINE_RATE, dtype=np.int64)

    @staticmethod
    def initial_state() -> npt.NDArray[np.float32]:
        return np.zeros(_STATE_SHAPE, dtype=np.float32)

    def score(
        self, window: npt.NDArray[np.float32], state: npt.NDArray[np.float32]
    ) -> tuple[float, npt.NDArray[np.float32]]:
        """Speech probability of ``window`` (64 samples of context + 512 new ones) and the next state."""
        output, new_state = self.session.run(
            None, {"input": window[np.newaxis, :], "state": state, "sr": self._sr}
        )
        return float(output[0, 0]), np.asarray(new_state, dtype=np.float32)


def load_silero(settings: VADSettings, context: LoadContext) -> SileroModel:
    return SileroModel(packaged_model_path())


@registry.register("vad", "silero", load_silero)
class SileroVAD(VADHandler):
    model: SileroModel

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reset_model_state()

    def reset_model_state(self) -> None:
        self._state = SileroModel.initial_state()
        self._context = np.zeros(CONTEXT, dtype=np.float32)

    def speech_probability(self, chunk: FloatAudio) -> float:
        samples = np.asarray(chunk, dtype=np.float32)
        if len(samples) != VAD_CHUNK:  # the model is trained on exactly 512 new samples
            samples = np.pad(samples[:VAD_CHUNK], (0, max(0, VAD_CHUNK - len(samples))))
        window = np.concatenate([self._context, samples])
        probability, self._state = self.model.score(window, self._state)
        self._context = window[-CONTEXT:]
        return probability
