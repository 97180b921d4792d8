"""pocketsphinx's recorded speech as the STT bench reads it: each recording with the words its transcription gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.wav import write_wav
from speech_to_speech.bench.human_speech import human_clips, transcriptions


def sphinx_data(root: Path) -> Path:
    """A small test/data folder laid out as pocketsphinx's sdist lays it out."""
    for folder, lines in {
        "librivox": ["<s> he was not an ill disposed young man </s> (sense-0880)"],
        "cards": ["<s> ten of clubs  </s> (001)", "<s> five five  </s> (004)"],
    }.items():
        (root / folder).mkdir(parents=True)
        name = "cards.transcription" if folder == "cards" else "transcription"
        (root / folder / name).write_text("\n".join(lines) + "\n")
        for line in lines:
            clip = line.rsplit("(", 1)[1].rstrip(")")
            write_wav(root / folder / f"{clip}.wav", np.full(1600, 0.25, np.float32), 16000)
    (root / "goforward.raw").write_bytes(np.full(800, 8192, "<i2").tobytes())
    return root


def test_each_recording_comes_with_its_words(tmp_path: Path) -> None:
    clips = {name: (words, samples) for name, words, samples in human_clips(sphinx_data(tmp_path))}
    assert {name: words for name, (words, _) in clips.items()} == {
        "librivox/sense-0880": "he was not an ill disposed young man",
        "cards/001": "ten of clubs",
        "cards/004": "five five",
        "goforward.raw": "go forward ten meters",
    }
    assert len(clips["cards/001"][1]) == 1600 and clips["goforward.raw"][1] == pytest.approx(np.full(800, 0.25))


def test_a_transcription_line_without_sentence_marks_is_read_too(tmp_path: Path) -> None:
    path = tmp_path / "transcription"
    path.write_text("one one one (man.ah.111a)\nnot a transcription line\n")
    assert transcriptions(path) == {"man.ah.111a": "one one one"}


def test_a_folder_without_the_recordings_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="pocketsphinx's test/data"):
        human_clips(tmp_path)
