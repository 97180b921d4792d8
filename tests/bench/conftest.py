"""Fixtures of the benchmark tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech.audio.wav import write_wav
from speech_to_speech.bench.turns import LATENCY
from speech_to_speech.testing.client_audio import tone


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    """One spoken question: a tone is speech to the scripted VAD."""
    folder = tmp_path / "questions"
    write_wav(folder / "q1.wav", np.concatenate([np.zeros(2400, np.float32), tone(0.6, 24000)]), 24000)
    return folder


LoadSamples = Callable[..., list[dict[str, Any]]]


def turn(phase: str, request: str, latency: float | None, **extra: Any) -> dict[str, Any]:
    """A sample as bench turns records it: answered when it has a latency."""
    answered = latency is not None
    sample = {"phase": phase, "repeat": 0, "request": request, "answered": answered, "double": False,
              "audio_responses": int(answered), "heard": [request],
              "responses": [{"status": "completed" if answered else "cancelled", "status_details": None,
                             "ending": "completed" if answered else "cancelled: turn_detected",
                             "turn_detection": {"outcome": "finished"}}], **extra}
    if answered:
        sample[LATENCY] = latency
    return sample


def _load_samples(unanswered: bool = False) -> list[dict[str, Any]]:
    alone = [turn("alone", name, ms) for name, ms in zip("abcd", (400.0, 500.0, 500.0, 600.0), strict=True)]
    busy = [turn("busy_neighbour", name, ms) for name, ms in zip("abcd", (600.0, 700.0, 800.0, 900.0), strict=True)]
    # Pair 0: a 550, b 650; pair 1: c 700, d 1000 (or no answer).
    two = [turn("two_at_once", "a", 550.0, pair=0, partner="b", speech_sent_at_ms=1000.0),
           turn("two_at_once", "b", 650.0, pair=0, partner="a", speech_sent_at_ms=1012.5),
           turn("two_at_once", "c", 700.0, pair=1, partner="d"),
           turn("two_at_once", "d", None if unanswered else 1000.0, pair=1, partner="c")]
    return alone + busy + two


@pytest.fixture
def load_samples() -> LoadSamples:
    """Hand-made bench load turns: alone 400/500/500/600 ms, busy 600–900, two pairs at once (the last
    turn unanswered with ``unanswered=True``)."""
    return _load_samples
