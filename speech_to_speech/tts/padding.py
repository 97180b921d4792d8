"""The silence a TTS model pads each synthesis with, cut down to the pause the text calls for.

Hibari starts every synthesis with ~300 ms of digital silence and ends it with
~500 ms. Left in, the first audio delta of a reply is silence the user waits
through, and a reply spoken in pieces (its first words, then the rest; then
each sentence) stops for ~800 ms at every seam. Cut, a reply sounds as soon
as its first audio arrives, and the pause after a piece follows its text:
a sentence's end, a clause's comma, or none where the piece was cut
mid-phrase to start speaking sooner.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech.tts.base import Phonemized

SOUND = 1e-3  # |sample| at or above this (-60 dBFS) is sound; below, the pad's silence
LEAD_MS = 20  # kept before the first sound, so its onset is not clipped
SENTENCE_PAUSE_MS = 250
CLAUSE_PAUSE_MS = 120
CUT_PAUSE_MS = 40  # a piece cut mid-phrase (the first words of a reply) runs on into the next
SENTENCE_ENDS = ".!?…"
CLAUSE_ENDS = ",;:—-"

def pause_after(text: str) -> int:
    """Milliseconds of silence a piece of speech ending with ``text`` is followed by."""
    end = text.rstrip().rstrip("\"')]}»”’")[-1:]
    if end and end in SENTENCE_ENDS:
        return SENTENCE_PAUSE_MS
    if end and end in CLAUSE_ENDS:
        return CLAUSE_PAUSE_MS
    return CUT_PAUSE_MS


def sound_span(audio: npt.NDArray[Any], rate: int, text: str) -> tuple[int, int] | None:
    """(first, end) samples of ``audio`` to keep: its sound, ``LEAD_MS`` before it and the pause ``text`` ends on
    after it; None when it is all silence."""
    loud = np.flatnonzero(np.abs(audio) >= SOUND)
    if not len(loud):
        return None
    first = max(0, int(loud[0]) - rate * LEAD_MS // 1000)
    return first, min(len(audio), int(loud[-1]) + 1 + rate * pause_after(text) // 1000)


def trim_padding(spoken: Phonemized, rate: int, text: str) -> Phonemized:
    """``spoken`` cut to its :func:`sound_span`; all silence, it is returned as it is.

    Phoneme timings stay true: the cut never reaches into the phonemes a backend timed.
    """
    span = sound_span(spoken.audio, rate, text)
    if span is None:
        return spoken
    first, end = span
    if spoken.durations is None:
        return Phonemized(spoken.audio[first:end], spoken.phonemes)
    first = min(first, spoken.start)
    end = max(end, spoken.start + sum(spoken.durations))
    return Phonemized(spoken.audio[first:end], spoken.phonemes, spoken.durations, spoken.start - first)
