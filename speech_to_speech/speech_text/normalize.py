"""The text a voice reads: one response's clauses, streamed, made speakable.

The LLM writes for a screen; the TTS must not read markdown, code, URLs or
emoji, and says numbers, units and abbreviations better as words. A
``SpeechText`` follows one response clause by clause (a code fence opened in
one clause is still open in the next; a list marker is markup only at the
start of a line). The transcript keeps the model's own text: only what
goes to the voice changes.
"""

from __future__ import annotations

import re

from speech_to_speech.speech_text.markup import is_rule, strip_inline, strip_line_start
from speech_to_speech.speech_text.spoken import say_abbreviations, say_numbers, say_symbols

_FENCE = re.compile(r"```|~~~")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.;:!?])")
_ENDS_SENTENCE = re.compile(r"[.!?:;,]$")


def speakable(text: str) -> str:
    """One line of text without markup, its numbers, abbreviations and symbols in words."""
    text = strip_inline(text)
    text = say_abbreviations(text)
    text = say_numbers(text)
    text = say_symbols(text)
    text = _SPACES.sub(" ", text)
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text).strip()


class SpeechText:
    """What the voice should say for each clause of one response, in order."""

    def __init__(self) -> None:
        self._in_fence = False
        self._line_start = True

    def feed(self, clause: str) -> str:
        """The spoken form of ``clause`` ("" when nothing of it is for the ear)."""
        lines = clause.split("\n")
        said: list[str] = []
        for index, line in enumerate(lines):
            at_line_start = self._line_start if index == 0 else True
            outside = self._outside_fences(line)
            if outside is None:
                continue
            line = outside
            if at_line_start:
                if is_rule(line):
                    continue
                line = strip_line_start(line)
            spoken = speakable(line)
            if spoken and index < len(lines) - 1 and not _ENDS_SENTENCE.search(spoken):
                spoken += "."  # a heading or list item ends where its line does
            if spoken:
                said.append(spoken)
        if clause:
            self._line_start = clause.endswith("\n")
        return " ".join(said)

    def _outside_fences(self, line: str) -> str | None:
        """The part of ``line`` outside code fences, toggling the fence state at each fence mark."""
        kept: list[str] = []
        position = 0
        for match in _FENCE.finditer(line):
            if not self._in_fence:
                kept.append(line[position : match.start()])
            self._in_fence = not self._in_fence
            position = len(line) if self._in_fence else match.end()
            if self._in_fence:
                break  # the rest of an opening fence's line names the language
        else:
            if not self._in_fence:
                kept.append(line[position:])
        text = "".join(kept)
        return text if text.strip() else None


def speech_text(text: str) -> str:
    """A whole text at once, as the voice should say it."""
    return SpeechText().feed(text)
