"""When two transcripts say the same word: casing and edge punctuation do not count.

Shared by the transcription notifier (which words are confirmed) and the
conversation's speculation (was the reply drafted for what was said).
"""

from __future__ import annotations

import re

_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")


def normalize_word(word: str) -> str:
    return _EDGE_PUNCT.sub("", word.lower())
