"""Fixtures of the benchmark tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.wav import write_wav
from speech_to_speech.testing.realtime_client import tone


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    """One spoken question: a tone is speech to the scripted VAD."""
    folder = tmp_path / "questions"
    write_wav(folder / "q1.wav", np.concatenate([np.zeros(2400, np.float32), tone(0.6, 24000)]), 24000)
    return folder
