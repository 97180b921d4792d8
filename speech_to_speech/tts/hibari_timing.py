"""How long hibari spoke each phoneme, read from its own model, for the viseme stage.

Hibari's ONNX graph predicts a duration for every phoneme and stretches the
phonemes by it before it predicts the spectrum, but it returns only the
spectrum and F0. With the ``onnx`` package (the ``visemes`` extra) the same
model file is loaded once more with that prediction as a seventh output, so
each sentence comes with the exact length of each of its phonemes, from the
same inference. The tensor is known by its name in the model hibari ships;
if it is missing, or its lengths do not add up to the audio, the durations
are left out and the viseme stage estimates them from the audio instead.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from speech_to_speech.tts.base import Phonemized

log = logging.getLogger(__name__)

# The rounded, clipped phoneme durations of hibari 0.2's graph (before it expands the phonemes).
DURATION_TENSOR = "/Cast_32_output_0"
HOP = 300  # samples per spectrum frame (24 kHz)
FRAMES_PER_UNIT = 2  # a duration unit is two frames


class TimedHibari:
    """One hibari voice whose inference also returns the phoneme durations."""

    def __init__(self, tts: Any, session: Any) -> None:
        self.tts = tts
        self.session = session
        self._mismatch_logged = False

    @classmethod
    def load(cls, tts: Any, threads: int = 1) -> TimedHibari | None:
        """The voice ``tts`` (a ``hibari.Hibari``) with durations, or None when they cannot be had."""
        try:
            import onnx
            import onnxruntime as ort
        except ImportError:
            log.info("no phoneme durations from hibari without the onnx package (the visemes extra)")
            return None
        model = onnx.load(tts.model_path)
        if not any(DURATION_TENSOR in node.output for node in model.graph.node):
            log.warning("hibari's model has no %s: visemes will be timed from the audio", DURATION_TENSOR)
            return None
        model.graph.output.append(onnx.helper.make_tensor_value_info(DURATION_TENSOR, onnx.TensorProto.INT64, None))
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = threads
        options.log_severity_level = 3
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return cls(tts, session)

    def speak(self, phonemes: str, speed: float, rng: np.random.Generator) -> Phonemized:
        """What ``hibari.Hibari.from_ids`` makes of ``phonemes``, with each symbol's length in samples."""
        from hibari import dsp

        kept = "".join(symbol for symbol in phonemes if symbol in self.tts.vocab)
        if not kept:
            return Phonemized(np.zeros(0, np.float32), kept)
        ids = self.tts.ids(kept)
        feeds = {"ids": np.asarray([ids], np.int64), "speed": np.asarray([speed], np.float32)}
        *spectrum, units = self.session.run(None, feeds)
        audio = dsp.synth(*(part[0] for part in spectrum), rng)
        samples = np.asarray(units).reshape(-1) * FRAMES_PER_UNIT * HOP
        if len(samples) != len(ids) or int(samples.sum()) != len(audio):
            if not self._mismatch_logged:
                log.warning("hibari's durations do not fit its audio; visemes will be timed from the audio")
                self._mismatch_logged = True
            return Phonemized(audio, kept)
        # The first and last ids are the pads: silence before and after the phonemes.
        return Phonemized(audio, kept, tuple(int(n) for n in samples[1:-1]), int(samples[0]))
