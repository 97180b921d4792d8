"""Pauses put inside one spoken sentence: the fragments of ``bench turns --corpus fragments``.

A phrase synthesised on its own ends the way a sentence does, with a falling
tone, so it *sounds* finished even when its words are not ("I need to buy a
present for my"). People who pause mid-sentence do not sound like that. So a
request whose corpus says ``spoken_as_one`` is synthesised whole, and silence
is inserted at its segment boundaries, found from Whisper's word timestamps
(the packaged tiny.en). The word count Whisper hears must equal the text's, or
the cut would land in the wrong place and the clip is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio

WHISPER_RATE = 16000


def word_ends(samples: audio.Samples, rate: int) -> list[tuple[float, float]]:
    """(start, end) in seconds of each word Whisper hears in ``samples``."""
    from faster_whisper import WhisperModel

    from speech_to_speech.stt.faster_whisper import packaged_model_path

    model = _model(WhisperModel, str(packaged_model_path()))
    segments, _ = model.transcribe(resample(samples, rate, WHISPER_RATE), language="en",
                                   word_timestamps=True, beam_size=1, condition_on_previous_text=False,
                                   vad_filter=False)
    return [(word.start, word.end) for segment in segments for word in (segment.words or [])]


_MODELS: dict[str, Any] = {}


def _model(cls: Any, path: str) -> Any:
    if path not in _MODELS:
        _MODELS[path] = cls(path, device="cpu", compute_type="int8")
    return _MODELS[path]


def split_at_words(samples: audio.Samples, rate: int, segment_words: Sequence[int],
                   pauses_ms: Sequence[int]) -> audio.Samples:
    """``samples`` (one sentence) with ``pauses_ms[i]`` of silence after its ``i``-th group of words.

    The cut between two words is the quietest 10 ms between the end of one and the start of the next.
    """
    words = word_ends(samples, rate)
    if len(words) != sum(segment_words):
        raise ValueError(f"Whisper heard {len(words)} words where the text has {sum(segment_words)}")
    bounds = audio.voiced_bounds(samples, rate) or (0, len(samples))
    voiced = samples[bounds[0]: bounds[1]]
    offset = bounds[0] / rate
    parts, start, counted = [], 0, 0
    for count, pause_ms in zip(segment_words, pauses_ms, strict=True):
        counted += count
        if counted == len(words):
            parts.append(voiced[start:])
            break
        cut = _quietest(voiced, rate, words[counted - 1][1] - offset, words[counted][0] - offset)
        parts += [voiced[start:cut], np.zeros(pause_ms * rate // 1000, np.float32)]
        start = cut
    return np.concatenate(parts).astype(np.float32)


def _quietest(samples: audio.Samples, rate: int, after_s: float, before_s: float) -> int:
    frame = rate // 100
    first, last = max(0, int(after_s * rate)), min(len(samples), int(max(before_s, after_s) * rate) + frame)
    if last - first <= frame:
        return min(len(samples), max(0, first))
    energy = [float(np.sum(np.square(samples[i: i + frame]))) for i in range(first, last - frame + 1, frame // 2)]
    return first + int(np.argmin(energy)) * (frame // 2) + frame // 2
