"""Benchmark input audio: the spoken questions, tones, and where speech starts and ends in them."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.rates import WIRE_RATE
from speech_to_speech.audio.resample import resample, to_float32
from speech_to_speech.audio.wav import read_wav

log = logging.getLogger(__name__)

RATE = WIRE_RATE  # what the benches send: the Realtime API's default input rate
FRAME_MS = 10
# A frame is voiced when its RMS is within this many dB of the loudest frame
# (and above an absolute floor): trims the fade-out of the last word, not the word.
RELATIVE_DB = -35.0
ABSOLUTE_FLOOR = 1e-3
# The repository's default: the shared benchmark questions beside the checkout.
DEFAULT_QUESTIONS_DIR = Path("../shared/audio/questions")
# The questions' words (also in their README): the fallback synthesises these.
QUESTION_TEXTS: dict[str, str] = {
    "q1.wav": "What is the weather today?",
    "q2.wav": "Please set a timer for ten minutes.",
    "q3.wav": "Remind me to call my sister on Friday afternoon.",
    "q4.wav": "How far is the moon from the earth?",
    "q5.wav": "Turn off the lights in the kitchen.",
}

Samples = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Speech:
    """A clip and its voiced span in samples: ``[start, end)``."""

    name: str
    text: str
    samples: Samples
    rate: int
    start: int
    end: int

    @property
    def voiced_ms(self) -> float:
        return (self.end - self.start) * 1000.0 / self.rate

    @property
    def end_ms(self) -> float:
        """Where its voice ends, from its first sample."""
        return self.end * 1000.0 / self.rate


def voiced_frames(samples: npt.NDArray[Any], rate: int, *, relative_db: float = RELATIVE_DB,
                  floor: float = ABSOLUTE_FLOOR) -> npt.NDArray[np.bool_]:
    """Per ``FRAME_MS`` frame (the last one zero-padded): is its RMS within ``relative_db`` of the loudest?"""
    audio = to_float32(np.asarray(samples))
    frame = max(1, rate * FRAME_MS // 1000)
    count = -(-len(audio) // frame)
    if count == 0:
        return np.zeros(0, dtype=np.bool_)
    padded = np.zeros(count * frame, dtype=np.float32)
    padded[: len(audio)] = audio
    rms = np.sqrt(np.mean(np.square(padded.reshape(count, frame)), axis=1))
    threshold = max(floor, float(rms.max()) * 10 ** (relative_db / 20))
    return np.asarray(rms >= threshold)


def voiced_bounds(samples: npt.NDArray[Any], rate: int, *, relative_db: float = RELATIVE_DB,
                  floor: float = ABSOLUTE_FLOOR) -> tuple[int, int] | None:
    """``(first voiced sample, one past the last)`` by frame energy; None for a silent clip."""
    voiced = np.flatnonzero(voiced_frames(samples, rate, relative_db=relative_db, floor=floor))
    if len(voiced) == 0:
        return None
    frame = max(1, rate * FRAME_MS // 1000)
    return int(voiced[0] * frame), int(min(len(samples), (voiced[-1] + 1) * frame))


def longest_pause_ms(samples: npt.NDArray[Any], rate: int) -> float:
    """The longest run of unvoiced frames between the first voiced frame and the last (0 for none)."""
    voiced = voiced_frames(samples, rate)
    if not voiced.any():
        return 0.0
    inside = voiced[np.argmax(voiced): len(voiced) - np.argmax(voiced[::-1])]
    longest = run = 0
    for frame_voiced in inside:
        run = 0 if frame_voiced else run + 1
        longest = max(longest, run)
    return float(longest * FRAME_MS)


def speech(name: str, text: str, samples: npt.NDArray[Any], rate: int) -> Speech:
    bounds = voiced_bounds(samples, rate)
    if bounds is None:
        raise ValueError(f"{name}: no speech found (the clip is silent)")
    return Speech(name, text, to_float32(np.asarray(samples)), rate, *bounds)


def tone(seconds: float, rate: int = RATE, level: float = 0.3, frequency: float = 440.0) -> Samples:
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    return (level * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


def tone_speech(seconds: float, rate: int = RATE, name: str = "tone") -> Speech:
    """A loud tone: speech to the scripted VAD, voiced from its first sample to its last."""
    samples = tone(seconds, rate)
    return Speech(name, "", samples, rate, 0, len(samples))


def _readme_texts(folder: Path) -> dict[str, str]:
    readme = folder / "README.md"
    if not readme.exists():
        return {}
    return dict(re.findall(r"^\|\s*(\S+\.wav)\s*\|\s*(.+?)\s*\|\s*$", readme.read_text(), re.MULTILINE))


def load_questions(folder: Path | None = None, limit: int | None = None, rate: int = RATE) -> list[Speech]:
    """The benchmark questions from ``folder`` (WAVs, in name order) at ``rate``.

    When the folder is missing, the same sentences are synthesised with the
    packaged hibari voice, so the bench still runs outside the repository.
    """
    folder = DEFAULT_QUESTIONS_DIR if folder is None else folder
    files = sorted(folder.glob("*.wav")) if folder.is_dir() else []
    if not files:
        log.warning("no questions in %s: synthesising them with hibari", folder)
        names = list(QUESTION_TEXTS)[:limit]
        return [speech(name, QUESTION_TEXTS[name], audio, rate)
                for name, audio in zip(names, synthesize([QUESTION_TEXTS[n] for n in names], rate), strict=True)]
    return load_wavs(folder, limit, rate, QUESTION_TEXTS)


def load_wavs(folder: Path, limit: int | None = None, rate: int = RATE,
              texts: dict[str, str] | None = None) -> list[Speech]:
    """Every WAV in ``folder`` (name order, the first ``limit``) at ``rate``, with its words.

    The words come from the folder's README table (``| name.wav | words |``),
    else from ``texts``; a clip without either has none.
    """
    known = {**(texts or {}), **_readme_texts(folder)}
    clips = []
    for path in sorted(folder.glob("*.wav"))[:limit]:
        samples, _ = read_wav(path, rate)
        clips.append(speech(path.name, known.get(path.name, ""), samples, rate))
    return clips


def synthesize(texts: list[str], rate: int = RATE) -> list[Samples]:
    """Speak ``texts`` with hibari's default voice (deterministic: a fixed seed)."""
    from speech_to_speech.config import LoadContext, ServerSettings
    from speech_to_speech.tts.hibari import SAMPLE_RATE, load_hibari

    voice = load_hibari(ServerSettings.model_validate({}).tts, LoadContext()).get(None)
    return [resample(np.asarray(voice(text, seed=0)), SAMPLE_RATE, rate) for text in texts]
