"""Speculative responses: start answering at a pause, speak only once the turn is over.

When the VAD sees a pause that may end the user's turn, the STT transcribes
the speech so far and the service sends the LLM a request for it at once.
Its output is held back, off the wire, until the turn really ends: if the
final transcript says the same words, the held response becomes the turn's
response (already generated, or well under way); if the user went on
speaking or said something else, it is cancelled like any stale output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from speech_to_speech.pipeline.transcription_notifier import normalize_word


@dataclass
class Speculation:
    item_id: str | None
    transcript: str
    response_id: str
    generation: int
    input_call_ids: tuple[str, ...] = ()
    # Pipeline output of the speculative response, in order, not yet on the wire.
    held: list[Any] = field(default_factory=list)

    def matches(self, item_id: str | None, transcript: str) -> bool:
        return item_id == self.item_id and same_words(transcript, self.transcript)


def same_words(a: str, b: str) -> bool:
    """Equal up to casing and edge punctuation: what the LLM was asked is what was said."""
    return [normalize_word(w) for w in a.split()] == [normalize_word(w) for w in b.split()]
