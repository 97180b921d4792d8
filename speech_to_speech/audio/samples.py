"""The arrays audio travels in: float32 in [-1, 1] inside the pipeline, int16 where it meets the wire."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatAudio = npt.NDArray[np.float32]
Int16Audio = npt.NDArray[np.int16]
