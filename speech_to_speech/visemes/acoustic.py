"""Visemes from the audio alone, for TTS backends that do not say which phonemes they spoke.

Every 20 ms frame is classed by its level and spectrum: quiet is silence; a
frame whose energy sits mostly above 3.5 kHz is a hiss (s, sh, f); a voiced
frame gets the vowel shape its first two formants point to (F1, how open the
jaw is; F2, how far forward the tongue and how spread the lips), found as the
strongest peaks of a smoothed spectrum in each formant's usual band; a voiced
but weak frame (a nasal or a closure) shows nearly closed lips. Runs shorter
than two frames merge into their neighbour, so the mouth does not flutter.

It is a guess: it cannot tell b from m from a quiet vowel, and music or
tones get vowel shapes. The phoneme route (see timeline) is the better one
wherever the TTS offers it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech.pipeline.messages import Int16Audio
from speech_to_speech.visemes.catalog import SILENCE
from speech_to_speech.visemes.timeline import Segment, merge

FRAME_MS = 20
# Below -50 dBFS a frame is silence; 25 dB under the loudest frame heard so far it is a closure or a nasal.
SILENCE_DBFS = -50.0
WEAK_DB = 25.0
HISS_HZ = 3500.0
HISS_SHARE = 0.5
F1_BAND = (250.0, 1000.0)
F2_BAND = (900.0, 2800.0)


def _vowel(f1: float, f2: float) -> str:
    if f1 >= 650:
        return "aa"
    if f2 < 1200:
        return "ou" if f1 < 450 else "oh"
    if f2 >= 1900 and f1 < 450:
        return "ih"
    return "E"


def _peak(freqs: npt.NDArray[np.floating[Any]], spectrum: npt.NDArray[np.floating[Any]],
          band: tuple[float, float]) -> float:
    inside = (freqs >= band[0]) & (freqs < band[1])
    return float(freqs[inside][np.argmax(spectrum[inside])])


class AcousticVisemes:
    """Classes audio frame by frame; remembers the loudest frame of the response for the 'weak' test."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.frame = rate * FRAME_MS // 1000
        self.freqs = np.fft.rfftfreq(self.frame, 1.0 / rate)
        self.window = np.hanning(self.frame)
        self.loudest_db = SILENCE_DBFS

    def reset(self) -> None:
        self.loudest_db = SILENCE_DBFS

    def classify(self, frame: npt.NDArray[np.float64]) -> str:
        rms = float(np.sqrt(np.mean(frame * frame)))
        level_db = 20 * np.log10(max(rms, 1e-9))
        if level_db < SILENCE_DBFS:
            return SILENCE
        self.loudest_db = max(self.loudest_db, level_db)
        padded = np.zeros(self.frame)
        padded[: len(frame)] = frame
        power = np.abs(np.fft.rfft(padded * self.window)) ** 2
        if power[self.freqs >= HISS_HZ].sum() >= HISS_SHARE * power.sum():
            return "SS"
        if level_db < self.loudest_db - WEAK_DB:
            return "PP"
        smooth = np.convolve(power, np.ones(5) / 5, mode="same")
        return _vowel(_peak(self.freqs, smooth, F1_BAND), _peak(self.freqs, smooth, F2_BAND))

    def segments(self, samples: Int16Audio) -> list[Segment]:
        """The visemes of ``samples``, covering every sample (a short last frame joins the one before)."""
        audio = samples.astype(np.float64) / 32768.0
        segments: list[Segment] = []
        for start in range(0, len(audio), self.frame):
            end = min(start + self.frame, len(audio))
            segments.append(Segment(self.classify(audio[start:end]), start, end))
        return merge(_smooth(merge(segments), 2 * self.frame))


def _smooth(segments: list[Segment], shortest: int) -> list[Segment]:
    """A run shorter than ``shortest`` samples takes the viseme of the run before it (or after, first)."""
    if len(segments) < 2:
        return segments
    out: list[Segment] = []
    for index, segment in enumerate(segments):
        if segment.end - segment.start < shortest:
            neighbour = out[-1].viseme if out else segments[index + 1].viseme
            segment = Segment(neighbour, segment.start, segment.end)
        out.append(segment)
    return out
