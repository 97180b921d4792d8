"""Timed visemes: a sentence's phonemes laid over its audio, and cut per audio chunk.

When the TTS says how long each phoneme lasted (hibari with the ``onnx``
package: its model's own duration prediction), the visemes follow those
lengths exactly. A TTS that knows its phonemes but not their durations still
tells us the order of the mouth shapes; their timing then comes from the
audio: the phonemes share the span where the audio is louder than silence,
each in proportion to a typical duration for its kind (stressed vowels
longest, stops shortest), and punctuation adds a pause.

Times are in samples of the sentence's audio until :func:`slice_chunk` turns
one chunk's part into whole milliseconds relative to that chunk, rounding
the boundaries (not the durations), so a chunk's visemes always add up to
its own length, to the millisecond.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from speech_to_speech.audio.samples import Int16Audio
from speech_to_speech.pipeline.messages.speech_output import Viseme
from speech_to_speech.visemes.catalog import LIKE_NEXT, PAUSES, PHONEME_VISEMES, SILENCE, phoneme_weight

STRESS_MARKS = "ˈˌ"
# Audio 40 dB under the sentence's loudest 10 ms is silence (leading and trailing quiet).
SILENCE_DB = 40.0
LEVEL_FRAME_MS = 10


@dataclass(frozen=True)
class Segment:
    """``viseme`` from sample ``start`` to sample ``end`` of the audio it was timed against."""

    viseme: str
    start: int
    end: int


def phoneme_visemes(phonemes: str, durations: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """(viseme, length) per sounded phoneme or pause, in order.

    With ``durations`` (one per symbol of ``phonemes``) the lengths are those:
    a stress mark's time goes to the sound after it, a space's (or any other
    shapeless symbol's) to the sound before it. Without, a length is a
    typical relative duration and shapeless symbols are skipped.
    """
    sounds: list[tuple[str, float]] = []
    stressed = False
    carried = 0.0  # time of stress marks, waiting for their sound
    breath = 0.0  # breaths waiting for the sound they open into
    for index, symbol in enumerate(phonemes):
        given = durations[index] if durations is not None else None
        if symbol in STRESS_MARKS:
            stressed = True
            carried += given or 0.0
            continue
        if symbol in LIKE_NEXT:
            breath += given if given is not None else 0.8
            continue
        if symbol in PAUSES:
            weight, viseme = PAUSES[symbol], SILENCE
        elif symbol in PHONEME_VISEMES:
            weight, viseme = phoneme_weight(symbol, stressed), PHONEME_VISEMES[symbol]
            stressed = False
        else:  # spaces, length marks, quotes
            if given and sounds:
                sounds[-1] = (sounds[-1][0], sounds[-1][1] + given)
            elif given:
                carried += given
            continue
        if breath:
            sounds.append((viseme, breath))
            breath = 0.0
        length = given + carried if given is not None else weight
        carried = 0.0
        if length > 0:
            sounds.append((viseme, length))
    return sounds


def speech_span(samples: Int16Audio, rate: int) -> tuple[int, int]:
    """First and last sample of the audio that is not silence; (0, 0) when all of it is."""
    frame = max(1, rate * LEVEL_FRAME_MS // 1000)
    count = len(samples) // frame
    if count == 0:
        return (0, len(samples)) if np.abs(samples).max(initial=0) > 0 else (0, 0)
    frames = samples[: count * frame].astype(np.float32).reshape(count, frame)
    level = np.sqrt(np.mean(frames * frames, axis=1))
    peak = float(level.max())
    if peak <= 0:
        return 0, 0
    loud = np.flatnonzero(level >= peak * 10 ** (-SILENCE_DB / 20))
    end = len(samples) if loud[-1] == count - 1 else int(loud[-1] + 1) * frame
    return int(loud[0]) * frame, end


def align(phonemes: str, samples: Int16Audio, rate: int, durations: Sequence[int] | None = None,
          start: int = 0) -> list[Segment]:
    """The visemes of ``phonemes`` over ``samples``: every sample is covered, silence outside the speech.

    ``durations`` (samples, one per symbol) and ``start`` (where the first
    symbol begins) are the TTS's own timing, when it has one; without them
    the phonemes are spread over the part of the audio louder than silence.
    """
    total = len(samples)
    sounds = phoneme_visemes(phonemes, durations)
    if durations is None:
        start, end = speech_span(samples, rate)
    else:
        end = min(total, start + int(sum(length for _, length in sounds)))
    if not sounds or end <= start:
        return [Segment(SILENCE, 0, total)] if total else []
    weights = np.array([weight for _, weight in sounds])
    bounds = start + np.round(np.concatenate(([0.0], np.cumsum(weights))) / weights.sum() * (end - start))
    segments = [Segment(SILENCE, 0, start)] if start else []
    for (viseme, _), a, b in zip(sounds, bounds[:-1], bounds[1:], strict=True):
        segments.append(Segment(viseme, int(a), int(b)))
    if end < total:
        segments.append(Segment(SILENCE, end, total))
    return merge(segments)


def merge(segments: Iterable[Segment]) -> list[Segment]:
    """Neighbours with the same viseme become one; empty segments go."""
    merged: list[Segment] = []
    for segment in segments:
        if segment.end <= segment.start:
            continue
        if merged and merged[-1].viseme == segment.viseme:
            merged[-1] = Segment(segment.viseme, merged[-1].start, segment.end)
        else:
            merged.append(segment)
    return merged


def slice_chunk(segments: Iterable[Segment], start: int, end: int, rate: int) -> tuple[Viseme, ...]:
    """The visemes of samples ``start``..``end``, in whole ms from ``start``; they add up to the chunk."""
    def ms(sample: int) -> int:
        return round((sample - start) * 1000 / rate)

    visemes: list[Viseme] = []
    for segment in segments:
        a, b = max(segment.start, start), min(segment.end, end)
        if b <= a:
            continue
        first, last = ms(a), ms(b)
        if last > first:
            visemes.append(Viseme(segment.viseme, first, last - first))
    return tuple(visemes)
