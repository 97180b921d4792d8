"""The sounds of ``bench room``: a user's listener words and interruptions, and a room talking around them.

The user's words are spoken by hibari (the packaged voice) and, so that no
figure rests on the one voice the rules were looked at with, by the same voice
three semitones higher and 16 % faster (resampled). The room is recorded
human speech from pocketsphinx's source package (:mod:`human_speech`: a
multi-speaker recording, LibriVox sentences, spoken cards and phrases), looped
to any length, and fan-like noise. Levels are set by the RMS of voiced
frames (:func:`audio.voiced_frames`), so "20 dB below the user" compares
speech with speech.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speech_to_speech.audio.resample import resample
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.bench import audio
from speech_to_speech.bench.human_speech import human_clips

RATE = audio.RATE
STORY = "Please tell me a long story about a lighthouse keeper and a lost seagull."
LISTENER_WORDS = ("Yeah.", "Okay.", "Right.", "I see.", "Mm-hmm.", "Uh-huh.", "Sure.", "Got it.", "Oh, okay.",
                  "Yeah, yeah.")
INTERRUPTIONS = ("Wait.", "Stop.", "No, I meant the other one.", "Hold on a second.",
                 "What was the seagull's name?", "Sorry, can you repeat that?", "Stop, stop. What time is it now?",
                 "Actually, tell me about the weather.", "Can you make it shorter?", "Excuse me.")
# Recordings in pocketsphinx's test folders besides the referenced ones (several speakers; rates vary).
ROOM_FILES = ("../regression/chan3.wav", "vad/leak-test.wav", "forever/input_4_16k.wav", "forever/input_2_16k.wav")
SHIFTED = 2 ** (3 / 12)  # the second voice: three semitones up (and as much faster)


def _shifted(samples: audio.Samples) -> audio.Samples:
    """The clip a few semitones higher: played at another rate (resampling then reading at the old one)."""
    return resample(samples, int(RATE * SHIFTED), RATE)


def spoken(texts: tuple[str, ...]) -> list[audio.Speech]:
    """Each text in hibari's voice, then each in the shifted voice."""
    said = audio.synthesize(list(texts), RATE)
    clips = [audio.speech(f"hibari: {t}", t, x, RATE) for t, x in zip(texts, said, strict=True)]
    return clips + [audio.speech(f"hibari+3: {t}", t, _shifted(x), RATE) for t, x in zip(texts, said, strict=True)]


def voiced_level_db(samples: audio.Samples) -> float:
    """The RMS (dBFS) of the voiced frames of ``samples``."""
    frame = RATE * audio.FRAME_MS // 1000
    voiced = audio.voiced_frames(samples, RATE)
    usable = samples[: len(voiced) * frame][: len(samples) // frame * frame].reshape(-1, frame)
    chosen = usable[voiced[: len(usable)]]
    return float(20 * np.log10(max(1e-9, np.sqrt(np.mean(np.square(chosen)))))) if len(chosen) else -100.0


def at_level(samples: audio.Samples, level_db: float) -> audio.Samples:
    """``samples`` scaled so that their voiced RMS is ``level_db``."""
    return (samples * 10 ** ((level_db - voiced_level_db(samples)) / 20)).astype(np.float32)


def room_talk(data: Path, seconds: float) -> audio.Samples:
    """``seconds`` of recorded human speech (pocketsphinx's ``test/data`` folder ``data``), looped."""
    pieces = [resample(clip, 16000, RATE) for _, _, clip in human_clips(data)]
    for name in ROOM_FILES:
        samples, _ = read_wav(data / name, RATE)
        pieces.append(samples)
    gap = np.zeros(RATE // 2, np.float32)  # people pause between sentences
    one = np.concatenate([np.concatenate([p, gap]) for p in pieces])
    return np.resize(one, int(seconds * RATE)).astype(np.float32)


def fan_noise(seconds: float, seed: int = 7) -> audio.Samples:
    """Fan-like noise: brown and white noise and a 120 Hz hum with its harmonics."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    white = rng.standard_normal(n).astype(np.float32)
    brown = np.cumsum(white)
    brown -= np.convolve(brown, np.ones(400) / 400, mode="same")
    t = np.arange(n) / RATE
    hum = sum(np.sin(2 * np.pi * 120 * k * t) / k for k in (1, 2, 3))
    mix = 0.6 * brown / np.abs(brown).max() + 0.3 * white / np.abs(white).max() + 0.1 * hum
    return mix.astype(np.float32)


def mixed(voice: audio.Speech, room: audio.Samples, offset: int) -> audio.Speech:
    """``voice`` said over the room from ``offset`` (the room goes on around it), as one clip."""
    lead = RATE  # a second of the room before the words
    out = room[offset: offset + lead + len(voice.samples) + RATE].copy()
    out[lead: lead + len(voice.samples)] += voice.samples
    return audio.Speech(voice.name, voice.text, out, RATE, lead + voice.start, lead + voice.end)
