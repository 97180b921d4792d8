"""Two benchmark questions said as one request, for `bench turns --clips-dir`.

    python scripts/question_pairs.py /tmp/pairs
    speech-to-speech bench turns --preset quality --clips-dir /tmp/pairs

Writes the 20 ordered pairs of the five spoken questions (../shared/audio/questions,
else hibari's voice), each pair joined by 250, 300, 350 or 400 ms of silence in turn,
and a README table of their words. A pause inside a request that follows a whole
question: speech the turn rules were not tuned on, to check that each pair is
answered once, as one request.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np

from speech_to_speech.audio.wav import write_wav
from speech_to_speech.bench import audio

PAUSES_MS = (250, 300, 350, 400)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    folder = parser.parse_args().folder
    folder.mkdir(parents=True, exist_ok=True)
    questions = audio.load_questions()
    rows = []
    for index, (first, second) in enumerate(itertools.permutations(questions, 2)):
        pause_ms = PAUSES_MS[index % len(PAUSES_MS)]
        gap = np.zeros(first.rate * pause_ms // 1000, dtype=np.float32)
        name = f"{Path(first.name).stem}_{Path(second.name).stem}_{pause_ms}.wav"
        write_wav(folder / name, np.concatenate([first.samples, gap, second.samples]), first.rate)
        rows.append(f"| {name} | {first.text} {second.text} |")
    (folder / "README.md").write_text("| file | words |\n|---|---|\n" + "\n".join(rows) + "\n")
    print(f"wrote {len(rows)} pairs to {folder}")


if __name__ == "__main__":
    main()
