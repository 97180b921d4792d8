"""The spoken-turn corpus: its requests, how segments become a clip, the clip cache; and (real_models)
that hibari speaks a request the same way twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech.bench import audio, corpus

RATE = 24000


def test_the_packaged_corpus_is_natural_requests_with_pauses_the_server_must_sit_through() -> None:
    loaded = corpus.load_corpus()
    requests = loaded.requests
    assert len(requests) >= 30
    several = [r for r in requests if len(r.segments) > 1]
    assert len(several) >= 15
    inner = [s.pause_ms for r in several for s in r.segments[:-1]]
    assert min(inner) >= 120 and max(inner) <= loaded.max_pause_ms < 500  # under the default min_silence_ms
    words = " ".join(r.text.lower() for r in requests)
    for filler in ("um,", "uh,", "so ", "well, let me think"):
        assert filler in words, filler
    assert any(r.text == "Please tell me a very long story about a brave knight and a friendly dragon."
               for r in requests)
    assert loaded.voiced_s == (1.0, 10.0)


def write_corpus(path: Path, requests: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"voiced_s": [0.1, 10.0], "max_pause_ms": 400, "requests": requests}))
    return path


def entry(name: str = "ask", *segments: tuple[str, int], text: str | None = None) -> dict[str, Any]:
    segments = segments or (("Hello.", 0),)
    return {"name": name, "text": text if text is not None else " ".join(t for t, _ in segments),
            "segments": [{"text": t, "pause_ms": p} for t, p in segments]}


@pytest.mark.parametrize(("requests", "problem"), [
    ([entry("a", ("Um,", 200), ("hi.", 0), text="Um hi.")], "not its segments"),
    ([entry("a", ("Hi.", 200))], "last segment has a pause"),
    ([entry("a", ("Um,", 600), ("hi.", 0))], "outside 0..400"),
    ([entry("a"), entry("a")], "used twice"),
])
def test_a_corpus_that_contradicts_itself_is_refused(tmp_path: Path, requests: list[dict[str, Any]],
                                                     problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        corpus.load_corpus(write_corpus(tmp_path / "corpus.json", requests))


def padded_tone(seconds: float) -> np.ndarray:
    """What a TTS returns: the words with near-silence before and after."""
    quiet = np.full(int(0.2 * RATE), 1e-5, np.float32)
    return np.concatenate([quiet, audio.tone(seconds, RATE), quiet])


def test_segments_are_trimmed_and_joined_by_exactly_their_pauses() -> None:
    joined = corpus.assemble([padded_tone(0.5), padded_tone(0.3)], [250, 0], RATE)
    assert len(joined) == int(0.8 * RATE) + int(0.25 * RATE)
    head, pause, tail = np.split(joined, [int(0.5 * RATE), int(0.75 * RATE)])
    assert not np.any(pause)
    assert audio.voiced_bounds(head, RATE) == (0, len(head)) and audio.voiced_bounds(tail, RATE) == (0, len(tail))
    assert audio.longest_pause_ms(joined, RATE) == 250.0


class FakeVoice:
    """Stands in for audio.synthesize: a tone per text, a tenth of a second per word."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str], rate: int) -> list[np.ndarray]:
        self.calls.append(texts)
        return [padded_tone(0.1 * len(text.split())) for text in texts]


def test_clips_are_synthesised_once_in_one_batch_then_read_from_the_cache(tmp_path: Path) -> None:
    path = write_corpus(tmp_path / "corpus.json", [entry("one", ("Well, let me think.", 300), ("Why?", 0)),
                                                   entry("two", ("Tell me a story.", 0))])
    loaded, voice = corpus.load_corpus(path), FakeVoice()
    first = corpus.clips(loaded, cache_dir=tmp_path / "cache", synthesize=voice)
    assert voice.calls == [["Well, let me think.", "Why?", "Tell me a story."]]
    assert [c.name for c in first] == ["one", "two"] and first[0].text == "Well, let me think. Why?"
    assert first[0].voiced_ms == pytest.approx(400 + 300 + 100)
    again = corpus.clips(loaded, cache_dir=tmp_path / "cache", synthesize=voice)
    assert len(voice.calls) == 1  # nothing synthesised the second time
    assert all(np.array_equal(a.samples, b.samples) for a, b in zip(first, again, strict=True))
    assert [c.name for c in corpus.clips(loaded, 1, cache_dir=tmp_path / "cache", synthesize=voice)] == ["one"]


def test_a_changed_request_is_synthesised_again() -> None:
    before = corpus.Request("a", "Um, hi.", (corpus.Segment("Um,", 200), corpus.Segment("hi.", 0)))
    after = corpus.Request("a", "Um, hi.", (corpus.Segment("Um,", 300), corpus.Segment("hi.", 0)))
    assert corpus.cache_key(before, RATE) != corpus.cache_key(after, RATE)
    assert corpus.cache_key(before, RATE) != corpus.cache_key(before, 16000)
    assert corpus.cache_key(before, RATE) == corpus.cache_key(before, RATE)


def test_a_clip_outside_the_corpus_bounds_is_refused(tmp_path: Path) -> None:
    path = write_corpus(tmp_path / "corpus.json", [entry("short", ("Hi.", 0))])  # 0.1 s of speech
    loaded = corpus.load_corpus(path)
    strict = corpus.Corpus(loaded.requests, (1.0, 10.0), loaded.max_pause_ms)
    with pytest.raises(ValueError, match=r"outside 1\.0\.\.10\.0"):
        corpus.clips(strict, cache_dir=tmp_path / "cache", synthesize=FakeVoice())


@pytest.mark.real_models
def test_hibari_speaks_a_request_the_same_way_twice_within_its_bounds(tmp_path: Path) -> None:
    loaded = corpus.load_corpus()
    request = next(r for r in loaded.requests if len(r.segments) > 2)  # fillers and two pauses
    one = corpus.Corpus((request,), loaded.voiced_s, loaded.max_pause_ms)
    first = corpus.clips(one, cache_dir=tmp_path / "first")[0]
    second = corpus.clips(one, cache_dir=tmp_path / "second")[0]  # a separate cache: synthesised again
    assert np.array_equal(first.samples, second.samples)
    low, high = loaded.voiced_s
    assert low <= first.voiced_ms / 1000.0 <= high
    # The pauses the server hears are the corpus's (the TTS's own, at commas, are shorter).
    assert audio.longest_pause_ms(first.samples, first.rate) < 500
