"""Text marks: which part of an assistant transcript the audio up to a moment voices.

The TTS speaks a reply clause by clause, and in order: it hands over a
clause's text (``TranscriptText``, the transcript delta), then all of that
clause's audio, and only then the next clause's text (tts/base.py). So when a
clause's text arrives the previous clause's audio is complete, and a mark
``(text_chars, audio_end)`` can be set exactly: the audio up to ``audio_end``
voices the transcript's first ``text_chars`` characters. Nothing is guessed
at clause boundaries; inside a clause the position is interpolated, which is
as fine as a clause-level TTS can tell.

A clause whose audio is still being made (or was cut off by a cancel) has no
end yet. Its length is estimated from the speaking rate of the clauses before
it, and never taken as shorter than the audio already made, so an estimate
can only place the heard position earlier in the text, never later.

Without any marks (audio that came with no clause text, or a ledger that
never saw the text) the transcript is cut in proportion to the audio heard.
Either way the cut goes back to the last whole word: the model is only told
what the user could have heard.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

# Audio samples (24 kHz) per transcript character before any clause was timed: about 15 characters a second.
DEFAULT_SAMPLES_PER_CHAR = 1600


@dataclass(frozen=True)
class Mark:
    """The audio up to ``audio_end`` (24 kHz samples) voices the transcript's first ``text_chars`` characters."""

    text_chars: int
    audio_end: int


@dataclass(frozen=True)
class _OpenClause:
    start_chars: int
    end_chars: int
    start_audio: int


class TextMarks:
    """The marks of one assistant item's transcript, set as its clauses and their audio arrive."""

    def __init__(self) -> None:
        self.marks: list[Mark] = []  # ends of voiced clauses; both coordinates never decrease
        self._open: _OpenClause | None = None
        self._sent = 0  # how many marks went out on the wire already

    def clause(self, start_chars: int, end_chars: int, produced: int) -> None:
        """The next clause's text, ``[start_chars, end_chars)``; the audio before ``produced`` voiced earlier text."""
        self.close(produced)
        self._open = _OpenClause(start_chars, end_chars, produced)

    def close(self, produced: int) -> None:
        """The clause being voiced is complete: its audio ends at ``produced``."""
        clause, self._open = self._open, None
        if clause is None:
            return
        last = self.marks[-1] if self.marks else Mark(0, 0)
        self.marks.append(Mark(max(clause.end_chars, last.text_chars), max(produced, last.audio_end)))

    def unsent(self) -> list[Mark]:
        """Marks set since the last call: what the next audio delta carries."""
        fresh = self.marks[self._sent :]
        self._sent = len(self.marks)
        return fresh

    def cut(self, chars: int, audio: int) -> None:
        """The item was cut: its transcript now ends at ``chars``, its audio at ``audio``."""
        # Marks before the cut stay (their text clipped to the cut, which may have dropped a trailing space).
        kept = [Mark(min(m.text_chars, chars), m.audio_end) for m in self.marks if m.audio_end <= audio]
        if self.marks or self._open is not None:
            kept.append(Mark(chars, audio))
        self.marks = kept
        self._open = None
        self._sent = min(self._sent, len(kept))

    def position(self, audio: int, produced: int, length: int) -> int:
        """The transcript position (characters, not yet whole words) the first ``audio`` samples reach.

        ``produced`` is how much audio the item has, ``length`` how long its transcript is.
        """
        if audio <= 0 or length <= 0:
            return 0
        points = [Mark(0, 0), *self.marks]
        clause = self._open
        if clause is not None:
            voiced = points[-1]
            rate = voiced.audio_end / voiced.text_chars if voiced.text_chars else DEFAULT_SAMPLES_PER_CHAR
            estimate = clause.start_audio + round((clause.end_chars - clause.start_chars) * rate)
            points.append(Mark(clause.start_chars, clause.start_audio))
            points.append(Mark(clause.end_chars, max(estimate, produced, clause.start_audio)))
        elif points[-1].text_chars < length:
            points.append(Mark(length, max(produced, points[-1].audio_end)))
        reached = 0
        for before, after in pairwise(points):
            if audio >= after.audio_end:
                reached = max(reached, after.text_chars)
                continue
            if audio > before.audio_end:
                span = after.audio_end - before.audio_end
                reached = max(reached, before.text_chars + (after.text_chars - before.text_chars)
                              * (audio - before.audio_end) // span)
            break
        return min(reached, length)


def whole_words(transcript: str, position: int) -> str:
    """``transcript`` up to ``position``, back to the last whole word (a word counts once all of it was heard)."""
    if position <= 0:
        return ""
    if position >= len(transcript):
        return transcript
    cut = position
    if not transcript[cut].isspace():
        cut = max(transcript.rfind(" ", 0, cut), 0)
    return transcript[:cut].rstrip()


def heard_text(transcript: str, marks: TextMarks | None, audio: int, produced: int) -> str:
    """What of ``transcript`` the first ``audio`` of its ``produced`` samples voice, in whole words."""
    if audio <= 0:
        return ""
    return whole_words(transcript, (marks or TextMarks()).position(audio, produced, len(transcript)))
