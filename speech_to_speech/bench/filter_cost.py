"""What each of the microphone's filters costs a session: CPU time per second of audio, measured in process.

``bench room``'s ``filters`` part. Every filter runs on the same room (recorded
talk at the user's level, with an answer playing into the microphone for the
echo canceller) in the 20 ms chunks a client sends, on this thread alone, so
the figure is the filter's own work: thread CPU time over audio time (a share
of one core a session needs for it). A filter whose weights are not installed
is reported as missing, not measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from speech_to_speech.audio.denoise import DenoiserFactory, WeightsMissing
from speech_to_speech.audio.echo import EchoCanceller
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.bench import audio

CHUNK_MS = 20
ECHO_DELAY_MS = 150  # speaker to microphone, as in the echo parts
ECHO_GAIN = 0.5  # the answer's level at the microphone against the speaker's

Samples = audio.Samples
Filter = Callable[[Samples, Samples], Samples]  # (the microphone's chunk, what the speaker plays meanwhile)


def _denoiser() -> Filter:
    denoiser = DenoiserFactory("dtln").new()
    return lambda microphone, played: denoiser.process(microphone)


def _echo_canceller() -> Filter:
    canceller = EchoCanceller(PIPELINE_RATE, delay_hint_ms=ECHO_DELAY_MS)

    def run(microphone: Samples, played: Samples) -> Samples:
        canceller.played(played)
        return canceller.cancel(microphone)
    return run


# The filters a session may run on its microphone (docs/echo.md), by the name the report gives them.
FILTERS: dict[str, Callable[[], Filter]] = {
    "noise_reduction (dtln)": _denoiser,
    "echo_cancellation (aec3, linear canceller, residual suppressor)": _echo_canceller,
}


def cost_of(make: Callable[[], Filter], microphone: Samples, played: Samples) -> dict[str, Any]:
    """One filter's CPU time per second of ``microphone`` (16 kHz), with ``played`` as the speaker's output."""
    try:
        run = make()
    except WeightsMissing as missing:
        return {"missing": str(missing)}
    step = PIPELINE_RATE * CHUNK_MS // 1000
    started = time.thread_time()
    for at in range(0, len(microphone) - step + 1, step):
        run(microphone[at:at + step], played[at:at + step])
    used_s = time.thread_time() - started
    seconds = len(microphone) / PIPELINE_RATE
    return {"audio_s": round(seconds, 1), "cpu_ms_per_audio_s": round(1000 * used_s / seconds, 2),
            "core_share": round(used_s / seconds, 4)}


def filter_costs(talk: Samples, answer: Samples, filters: dict[str, Callable[[], Filter]] = FILTERS
                 ) -> dict[str, dict[str, Any]]:
    """Each filter's cost on ``talk`` (the room, 16 kHz) with ``answer`` playing and echoing into it."""
    n = min(len(talk), len(answer))
    played = np.asarray(answer[:n], np.float32)
    lag = PIPELINE_RATE * ECHO_DELAY_MS // 1000
    echo = np.concatenate([np.zeros(lag, np.float32), played[:n - lag]]) * ECHO_GAIN
    microphone = np.clip(np.asarray(talk[:n], np.float32) + echo, -1.0, 1.0).astype(np.float32)
    return {name: cost_of(make, microphone, played) for name, make in filters.items()}
