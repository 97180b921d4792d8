"""Recorded human speech with reference transcripts: the test data of pocketsphinx's source package.

Every other clip our benches use is synthesised, and a recogniser can do
well on synthetic voices and worse on people. pocketsphinx's sdist (BSD)
ships a few real recordings at 16 kHz with what was said: five LibriVox
sentences read from *Sense and Sensibility*, five spoken playing cards
("eight of spades four of clubs seven of hearts") and "go forward ten
meters". Fetch it once (no build, no install)::

    pip download --no-deps --no-binary pocketsphinx pocketsphinx -d /tmp/ps
    tar xzf /tmp/ps/pocketsphinx-*.tar.gz -C /tmp/ps

and pass ``/tmp/ps/pocketsphinx-*/test/data`` to the bench.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.wav import read_wav

RATE = PIPELINE_RATE  # what the STT under test takes
# "<s> ten of clubs </s> (001)": a sphinx transcription line, its words and the clip's name.
_LINE = re.compile(r"^(?:<s>)?\s*(?P<words>.*?)\s*(?:</s>)?\s*\((?P<name>[^)]+)\)\s*$")
RAW_CLIPS = {"goforward.raw": "go forward ten meters"}  # headerless PCM16 at 16 kHz; words as its tests expect

Clip = tuple[str, str, np.ndarray]  # name, words said, 16 kHz float32 samples


def transcriptions(path: Path) -> dict[str, str]:
    """name -> words, from a sphinx ``transcription`` file."""
    found = {}
    for line in path.read_text().splitlines():
        match = _LINE.match(line.strip())
        if match:
            found[match["name"]] = match["words"]
    return found


def human_clips(data: Path) -> list[Clip]:
    """Every recording with a reference under pocketsphinx's ``test/data`` folder ``data``."""
    clips: list[Clip] = []
    for folder in ("librivox", "cards"):
        listed = sorted((data / folder).glob("*transcription"))
        if not listed:
            raise FileNotFoundError(f"no {folder}/*transcription under {data}: pass pocketsphinx's test/data folder")
        for name, words in sorted(transcriptions(listed[0]).items()):
            samples, _ = read_wav(data / folder / f"{name}.wav", RATE)
            clips.append((f"{folder}/{name}", words, samples))
    for name, words in RAW_CLIPS.items():
        pcm = np.frombuffer((data / name).read_bytes(), dtype="<i2")
        clips.append((name, words, pcm.astype(np.float32) / 32768.0))
    return clips
