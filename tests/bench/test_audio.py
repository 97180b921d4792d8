"""Where speech starts and ends in a clip, and where the benchmark questions come from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.wav import write_wav
from speech_to_speech.bench import audio

RATE = 24000


def clip(*parts: tuple[str, float]) -> np.ndarray:
    pieces = [audio.tone(seconds, RATE) if kind == "tone" else np.zeros(int(seconds * RATE), np.float32)
              for kind, seconds in parts]
    return np.concatenate(pieces)


def test_voiced_bounds_trim_silence_on_both_sides() -> None:
    samples = clip(("silence", 0.3), ("tone", 0.5), ("silence", 0.4))
    assert audio.voiced_bounds(samples, RATE) == (int(0.3 * RATE), int(0.8 * RATE))


def test_a_fading_tail_below_the_relative_threshold_is_not_speech() -> None:
    samples = clip(("tone", 0.5), ("silence", 0.2))
    tail = audio.tone(0.2, RATE, level=0.3 * 10 ** (-50 / 20))  # 50 dB down: room noise, not a word
    assert audio.voiced_bounds(np.concatenate([samples, tail]), RATE) == (0, int(0.5 * RATE))


def test_a_pause_inside_speech_does_not_end_it() -> None:
    samples = clip(("tone", 0.3), ("silence", 0.2), ("tone", 0.3), ("silence", 0.1))
    assert audio.voiced_bounds(samples, RATE) == (0, int(0.8 * RATE))


def test_silence_and_empty_clips_have_no_speech() -> None:
    assert audio.voiced_bounds(np.zeros(RATE, np.float32), RATE) is None
    assert audio.voiced_bounds(np.zeros(0, np.float32), RATE) is None
    with pytest.raises(ValueError, match="silent"):
        audio.speech("quiet.wav", "", np.zeros(RATE, np.float32), RATE)


def test_int16_clips_are_measured_like_float_ones() -> None:
    samples = clip(("silence", 0.1), ("tone", 0.2))
    as_int16 = (samples * 32767).astype(np.int16)
    assert audio.voiced_bounds(as_int16, RATE) == audio.voiced_bounds(samples, RATE)


def test_questions_load_in_name_order_with_their_words(tmp_path: Path) -> None:
    write_wav(tmp_path / "q2.wav", clip(("silence", 0.1), ("tone", 0.3)), 16000)
    write_wav(tmp_path / "q1.wav", clip(("tone", 0.2)), RATE)
    (tmp_path / "README.md").write_text("| file | words |\n|---|---|\n| q2.wav | Second question here. |\n")
    questions = audio.load_questions(tmp_path)
    assert [q.name for q in questions] == ["q1.wav", "q2.wav"]
    assert questions[1].text == "Second question here."
    assert questions[0].text == audio.QUESTION_TEXTS["q1.wav"]
    assert all(q.rate == RATE for q in questions)  # resampled to what the bench sends
    assert audio.load_questions(tmp_path, limit=1)[0].name == "q1.wav"


def test_missing_questions_are_synthesised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spoken: list[str] = []

    def fake_synthesize(texts: list[str], rate: int = RATE) -> list[np.ndarray]:
        spoken.extend(texts)
        return [clip(("tone", 0.2)) for _ in texts]

    monkeypatch.setattr(audio, "synthesize", fake_synthesize)
    questions = audio.load_questions(tmp_path / "absent", limit=2)
    assert [q.name for q in questions] == ["q1.wav", "q2.wav"]
    assert spoken == [audio.QUESTION_TEXTS["q1.wav"], audio.QUESTION_TEXTS["q2.wav"]]


def test_the_longest_pause_is_inside_the_speech_not_around_it() -> None:
    samples = clip(("silence", 0.6), ("tone", 0.3), ("silence", 0.2), ("tone", 0.2), ("silence", 0.3),
                   ("tone", 0.3), ("silence", 0.9))
    assert audio.longest_pause_ms(samples, RATE) == 300.0
    assert audio.longest_pause_ms(clip(("tone", 0.3)), RATE) == 0.0
    assert audio.longest_pause_ms(np.zeros(RATE, np.float32), RATE) == 0.0
