"""A microphone streamed through an echo canceller, its output put back where its input was.

The canceller's output runs late by :attr:`EchoCanceller.output_delay` while
the assistant speaks (its double-talk call reaches back over the frames it
holds); tests compare the output with the microphone sample for sample, so
each chunk of output is placed where the input it came from was.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from speech_to_speech.audio.echo import EchoCanceller


def stream(canceller: EchoCanceller, mic: np.ndarray, *, chunk: int = 320,
           before: Callable[[int], None] | None = None, after: Callable[[int], None] | None = None) -> np.ndarray:
    """``mic`` through ``canceller`` in ``chunk``-sample appends, aligned to ``mic`` and as long as the part of it
    that came out (where a left-out frame was, zeros). ``before``/``after``: called with each chunk's first
    sample index around it (to hand the speaker its reference, to read the canceller's state)."""
    aligned = np.zeros(len(mic), np.float32)
    sent = end = 0  # output samples so far; the input samples that came out
    for start in range(0, len(mic), chunk):
        if before is not None:
            before(start)
        out = canceller.cancel(mic[start:start + chunk])
        if after is not None:
            after(start)
        at = sent - canceller.output_delay  # the input sample the first of ``out`` came from
        lo, hi = max(0, at), min(len(mic), at + len(out))
        if hi > lo:
            aligned[lo:hi] = out[lo - at:hi - at]
            end = max(end, hi)
        sent += len(out)
    return aligned[:end]
