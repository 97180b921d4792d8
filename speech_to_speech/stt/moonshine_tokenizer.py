"""Moonshine's ``tokenizer.bin``: token ids back into text.

The file is the vocabulary in id order, each token's bytes after their
length: one byte for lengths under 128, else two (the low seven bits with the
high bit set, then the rest of the length times 128). Ids 0-2 are ``<unk>``,
``<s>`` and ``</s>``; the next 256 are single bytes (SentencePiece's byte
fallback), so joining the bytes of a decode's tokens and reading them as
UTF-8 gives its text, with SentencePiece's "▁" marking a space.
"""

from __future__ import annotations

from pathlib import Path

SPACE = "\u2581"  # SentencePiece's word boundary
UNKNOWN, START, END = 0, 1, 2
SPECIAL = frozenset({UNKNOWN, START, END})


def read_vocabulary(data: bytes) -> list[bytes]:
    """Each token's bytes, in id order."""
    tokens: list[bytes] = []
    at = 0
    while at < len(data):
        length = data[at]
        at += 1
        if length >= 128:
            if at >= len(data):
                raise ValueError("tokenizer.bin ends inside a token's length")
            length = (length - 128) + 128 * data[at]
            at += 1
        if at + length > len(data):
            raise ValueError(f"tokenizer.bin ends inside token {len(tokens)}")
        tokens.append(data[at: at + length])
        at += length
    return tokens


class MoonshineTokenizer:
    """Decodes Moonshine's token ids (it never needs to encode: the decoder starts from ``<s>`` alone)."""

    start = START
    end = END

    def __init__(self, path: Path) -> None:
        self.vocabulary = read_vocabulary(path.read_bytes())
        if len(self.vocabulary) <= END or self.vocabulary[END] != b"</s>":
            raise ValueError(f"{path} does not look like Moonshine's tokenizer (no </s> at id {END})")

    def __len__(self) -> int:
        return len(self.vocabulary)

    def piece(self, token: int) -> str:
        """One token's text as it would read after the text before it ("▁" as a space)."""
        return self.vocabulary[token].decode("utf-8", errors="replace").replace(SPACE, " ")

    def decode(self, tokens: list[int]) -> str:
        """The text of ``tokens``, special tokens left out, without the leading space of the first word."""
        data = b"".join(self.vocabulary[t] for t in tokens if t not in SPECIAL and 0 <= t < len(self.vocabulary))
        return data.decode("utf-8", errors="replace").replace(SPACE, " ").strip()
