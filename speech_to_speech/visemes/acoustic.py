"""Visemes from the audio alone, for TTS backends that do not say which phonemes they spoke.

Every 20 ms frame is classed by its level and spectrum: quiet is silence; a
frame whose energy sits mostly above 3.5 kHz is a hiss (s, sh, f); a voiced
but weak frame (a nasal or a closure) shows nearly closed lips; any other
frame gets the vowel shape its first two formants point to (F1, how open the
jaw is; F2, how far forward the tongue and how spread the lips). The formants
are the resonances of a linear-prediction model of the frame (order 14 at
12 kHz, the usual rule of thumb of two poles per kHz plus two). Runs shorter
than two frames merge into their neighbour, so the mouth does not flutter.

It is a guess: it cannot tell b from m from a quiet vowel, and music or
tones get vowel shapes. On hibari's speech it shows the viseme that the
model's own phoneme durations put there on about a third of 20 ms frames
(scripts/viseme_cost.py), so the phoneme route (see timeline) is the one to
use wherever the TTS offers it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.linalg import solve_toeplitz
from scipy.signal import resample_poly

from speech_to_speech.audio.samples import Int16Audio
from speech_to_speech.visemes.catalog import SILENCE
from speech_to_speech.visemes.timeline import Segment, merge

Frame = npt.NDArray[np.float64]

FRAME_MS = 20
# Below -50 dBFS a frame is silence; 25 dB under the loudest frame heard so far it is a closure or a nasal.
SILENCE_DBFS = -50.0
WEAK_DB = 25.0
HISS_HZ = 3500.0
HISS_SHARE = 0.65
LPC_RATE = 12000
LPC_ORDER = 14
# A resonance wider than this is no formant; formants start above this frequency.
MAX_BANDWIDTH_HZ = 500.0
MIN_FORMANT_HZ = 200.0


def vowel_of(f1: float, f2: float) -> str:
    """The vowel viseme of two formant frequencies (Hz)."""
    if f1 >= 650:
        return "aa"
    if f2 < 1200:
        return "ou" if f1 < 450 else "oh"
    if f2 >= 1900 and f1 < 450:
        return "ih"
    return "E"


def formants(frame: Frame, rate: int) -> tuple[float, float] | None:
    """F1 and F2 of a frame, or None when its prediction model shows fewer than two resonances."""
    x = resample_poly(frame, LPC_RATE, rate) if rate != LPC_RATE else frame
    x = np.append(x[:1], x[1:] - 0.97 * x[:-1]) * np.hamming(len(x))  # pre-emphasis, window
    correlation = np.correlate(x, x, "full")[len(x) - 1 : len(x) + LPC_ORDER]
    if correlation[0] <= 1e-12:
        return None
    try:
        coefficients = solve_toeplitz(correlation[:LPC_ORDER], -correlation[1:])
    except np.linalg.LinAlgError:
        return None
    roots = np.roots(np.concatenate(([1.0], coefficients)))
    roots = roots[np.imag(roots) > 0]
    frequencies = np.angle(roots) * LPC_RATE / (2 * np.pi)
    bandwidths = -np.log(np.abs(roots)) * LPC_RATE / np.pi
    found = np.sort(frequencies[(frequencies > MIN_FORMANT_HZ) & (bandwidths < MAX_BANDWIDTH_HZ)])
    return (float(found[0]), float(found[1])) if len(found) >= 2 else None


class AcousticVisemes:
    """Classes audio frame by frame; remembers the loudest frame of the session for the 'weak' test."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.frame = rate * FRAME_MS // 1000
        self.freqs = np.fft.rfftfreq(self.frame, 1.0 / rate)
        self.window = np.hanning(self.frame)
        self.loudest_db = SILENCE_DBFS

    def reset(self) -> None:
        self.loudest_db = SILENCE_DBFS

    def classify(self, frame: Frame) -> str:
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
        found = formants(padded, self.rate)
        return vowel_of(*found) if found is not None else "E"

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
