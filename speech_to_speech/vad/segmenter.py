"""Speech and silence on the audio clock: the segments a VAD backend's scores make.

Given each 512-sample chunk and its speech probability, a :class:`Segmenter`
keeps the current speech (with a prefix pad of the audio before it), how much
of it was voiced, where its voice begins and ends in input samples, and how
long the silence after it has run. It knows nothing of turns, ids or
sessions: the VAD's turn host (vad/turn_host.py) reads it and decides.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.pipeline.messages.input_audio import AudioChunk, TurnEnd, Utterance

CHUNK_MS = VAD_CHUNK * 1000 // PIPELINE_RATE  # 32 ms
# Below the threshold by this much a chunk is silence; between the two it is near-speech, neither.
HYSTERESIS = 0.15

# What a chunk was: ``quiet`` no speech, and none begins; ``began`` speech begins with it; else a chunk of the
# speech, ``voiced``, ``silent`` (the silence after it grows) or ``near`` (near-speech: the silence starts over).
Sound = Literal["quiet", "began", "voiced", "near", "silent"]


def ms(samples: int) -> int:
    """``samples`` at the pipeline's rate, in whole milliseconds."""
    return samples * 1000 // PIPELINE_RATE


def end_ms(chunks: Sequence[AudioChunk]) -> int:
    """Where ``chunks`` end on the audio clock (0: no chunks)."""
    return ms(chunks[-1].offset + VAD_CHUNK) if chunks else 0


def utterance(chunks: Sequence[AudioChunk], item_id: str | None, *, manual: bool) -> Utterance:
    """``chunks`` as the STT gets them, for the turn ``item_id``."""
    end = end_ms(chunks)
    samples = np.concatenate([c.samples for c in chunks]) if chunks else np.zeros(0, np.float32)
    return Utterance(samples=samples, audio_start_ms=ms(chunks[0].offset) if chunks else end, audio_end_ms=end,
                     item_id=item_id, manual=manual, ended=TurnEnd.now())


@dataclass(frozen=True)
class Segment:
    """A speech that ended: its chunks, and its voice's end on the audio clock and on ``clock``."""

    chunks: list[AudioChunk]
    speech_ms: int  # its voiced span, first voiced chunk to last
    voice_end: int  # the input sample its voice ended at
    voiced_at: float  # the clock when its last voiced chunk came in

    @property
    def end_ms(self) -> int:
        return end_ms(self.chunks)


class Segmenter:
    """One session's speech and silence; ``clock`` stamps when voice came in (the user's time, whatever pace the
    audio comes at)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.reset()

    def reset(self) -> None:
        """Forget all audio: the speech, and the pad before it."""
        self._history: deque[AudioChunk] = deque()  # the latest chunks, for the pad before speech
        self._forget_speech()

    def _forget_speech(self) -> None:
        self.chunks: list[AudioChunk] = []  # the current speech's, its pad first
        self.in_speech = False
        self.voiced_ms = 0
        self.silence_ms = 0  # the silence run at its end (near-speech starts it over)
        # Its voiced span in input samples (its first voiced chunk to its last): the audio clock the overlap
        # policy decides on.
        self.voice_start = self.voice_end = 0
        self.voiced_at = 0.0

    @property
    def speech_ms(self) -> int:
        return ms(self.voice_end - self.voice_start)

    @property
    def length_ms(self) -> int:
        """The current speech's length, its pad and silences included."""
        return len(self.chunks) * CHUNK_MS

    def hear(self, chunk: AudioChunk, probability: float, threshold: float, pad_ms: int) -> Sound:
        """The next chunk, and the probability that it is speech; speech begins at ``threshold`` with the last
        ``pad_ms`` before it."""
        voiced = probability >= threshold
        if not self.in_speech:
            self._history.append(chunk)
            kept = max(1, pad_ms // CHUNK_MS + 1)
            while len(self._history) > kept:
                self._history.popleft()
            if not voiced:
                return "quiet"
            self.in_speech = True
            self.chunks = list(self._history)
            self._history.clear()
            self.voiced_ms, self.silence_ms = CHUNK_MS, 0
            self.voice_start = chunk.offset
            self._voiced(chunk)
            return "began"
        self.chunks.append(chunk)
        if voiced:
            self.voiced_ms += CHUNK_MS
            self._voiced(chunk)
            self.silence_ms = 0
            return "voiced"
        if probability < max(threshold - HYSTERESIS, 0.01):
            self.silence_ms += CHUNK_MS
            return "silent"
        self.silence_ms = 0
        return "near"

    def _voiced(self, chunk: AudioChunk) -> None:
        self.voice_end, self.voiced_at = chunk.offset + VAD_CHUNK, self._clock()

    def end(self, kept_silence_ms: int | None = None) -> Segment:
        """End the current speech, keeping ``kept_silence_ms`` of its trailing silence (None: all of it)."""
        chunks = self.chunks
        if kept_silence_ms is not None:
            # A pad's worth of the silence keeps the last word whole; the rest is no part of the speech.
            trailing = max(0, self.silence_ms - kept_silence_ms) // CHUNK_MS
            chunks = chunks[: max(len(chunks) - trailing, 1)]
        segment = Segment(chunks, self.speech_ms, self.voice_end, self.voiced_at)
        self._forget_speech()
        return segment

    def take_pad(self) -> list[AudioChunk]:
        """The audio kept before any speech (a commit in silence takes it)."""
        chunks = list(self._history)
        self._history.clear()
        return chunks
