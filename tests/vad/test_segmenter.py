"""The segmenter alone: speech and silence from a backend's scores, on the audio clock.

Sequences of scores are generated; what the segmenter says of each chunk and
what it holds are checked against the scores themselves (read from the end
of the sequence back), not against a second copy of its logic.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.pipeline.messages.input_audio import AudioChunk
from speech_to_speech.vad.segmenter import CHUNK_MS, HYSTERESIS, Segmenter, utterance

THRESHOLD = 0.5
VOICED, NEAR, SILENT = 0.9, THRESHOLD - HYSTERESIS / 2, 0.05
scores = st.lists(st.sampled_from([VOICED, NEAR, SILENT, SILENT]), max_size=60)
pads = st.sampled_from([0, 32, 96, 300])


def chunk(index: int) -> AudioChunk:
    return AudioChunk(np.full(VAD_CHUNK, float(index), np.float32), index * VAD_CHUNK)


def hear_all(segmenter: Segmenter, probabilities: list[float], pad_ms: int) -> list[str]:
    return [segmenter.hear(chunk(i), p, THRESHOLD, pad_ms) for i, p in enumerate(probabilities)]


@settings(max_examples=300, deadline=None)
@given(scores, pads)
def test_speech_begins_at_the_first_voiced_chunk_and_tells_each_chunk_after_it(probabilities: list[float],
                                                                               pad_ms: int) -> None:
    sounds = hear_all(Segmenter(), probabilities, pad_ms)
    first = probabilities.index(VOICED) if VOICED in probabilities else len(probabilities)
    assert sounds[:first] == ["quiet"] * first
    named = {VOICED: "voiced", NEAR: "near", SILENT: "silent"}
    assert sounds[first + 1:] == [named[p] for p in probabilities[first + 1:]]
    assert sounds[first:first + 1] == (["began"] if first < len(probabilities) else [])


@settings(max_examples=300, deadline=None)
@given(scores, pads)
def test_the_speech_holds_its_pad_its_voice_and_the_silence_at_its_end(probabilities: list[float],
                                                                       pad_ms: int) -> None:
    segmenter = Segmenter()
    hear_all(segmenter, probabilities, pad_ms)
    if VOICED not in probabilities:
        assert not segmenter.in_speech and segmenter.chunks == []
        return
    first = probabilities.index(VOICED)
    last = len(probabilities) - 1 - probabilities[::-1].index(VOICED)
    pad = min(first, pad_ms // CHUNK_MS)
    assert segmenter.in_speech
    assert [c.offset // VAD_CHUNK for c in segmenter.chunks] == list(range(first - pad, len(probabilities)))
    assert segmenter.voiced_ms == probabilities.count(VOICED) * CHUNK_MS
    assert segmenter.speech_ms == (last + 1 - first) * CHUNK_MS
    after_any_sound = list(itertools.takewhile(lambda p: p == SILENT, reversed(probabilities)))
    assert segmenter.silence_ms == len(after_any_sound) * CHUNK_MS  # near-speech starts the silence over
    assert segmenter.length_ms == len(segmenter.chunks) * CHUNK_MS


@settings(max_examples=300, deadline=None)
@given(scores.filter(lambda ps: VOICED in ps), pads, st.one_of(st.none(), pads))
def test_an_ended_speech_keeps_a_pad_of_its_silence_and_the_next_starts_afresh(
        probabilities: list[float], pad_ms: int, kept_ms: int | None) -> None:
    segmenter = Segmenter()
    hear_all(segmenter, probabilities, pad_ms)
    held, silence_ms = list(segmenter.chunks), segmenter.silence_ms
    segment = segmenter.end(kept_ms)
    dropped = 0 if kept_ms is None else max(0, silence_ms - kept_ms) // CHUNK_MS
    assert segment.chunks == held[: max(len(held) - dropped, 1)]
    assert segment.end_ms == (segment.chunks[-1].offset + VAD_CHUNK) * 1000 // 16000
    assert not segmenter.in_speech and segmenter.chunks == [] and segmenter.silence_ms == 0
    assert segmenter.hear(chunk(len(probabilities)), SILENT, THRESHOLD, pad_ms) == "quiet"
    assert segmenter.hear(chunk(len(probabilities) + 1), VOICED, THRESHOLD, pad_ms) == "began"
    assert segmenter.voiced_ms == CHUNK_MS


def test_voice_is_stamped_by_the_clock_when_it_comes_in() -> None:
    ticks = iter([10.0, 11.0, 12.0])
    segmenter = Segmenter(clock=lambda: next(ticks))
    hear_all(segmenter, [VOICED, VOICED, SILENT, NEAR], pad_ms=0)
    assert segmenter.voiced_at == 11.0  # the last voiced chunk's, not the silence's after it
    assert segmenter.end().voiced_at == 11.0


def test_a_commit_in_silence_takes_the_pad_kept_before_speech() -> None:
    segmenter = Segmenter()
    hear_all(segmenter, [SILENT] * 5, pad_ms=64)
    pad = segmenter.take_pad()
    assert [c.offset // VAD_CHUNK for c in pad] == [2, 3, 4]  # 64 ms of pad, and the chunk that would begin speech
    assert segmenter.take_pad() == []


def test_an_utterance_spans_its_chunks_on_the_audio_clock() -> None:
    made = utterance([chunk(3), chunk(4)], "item_1", manual=True)
    assert (made.audio_start_ms, made.audio_end_ms, made.item_id, made.manual) == (96, 160, "item_1", True)
    assert made.samples.tolist() == [3.0] * VAD_CHUNK + [4.0] * VAD_CHUNK
    empty = utterance([], "item_2", manual=True)
    assert (len(empty.samples), empty.audio_start_ms, empty.audio_end_ms) == (0, 0, 0)
