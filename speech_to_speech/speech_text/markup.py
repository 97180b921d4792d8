"""What a reader sees but a listener should not hear: markdown, code, URLs, emoji.

Each function takes one line-free piece of text (the streaming side in
``normalize`` handles fences and line starts) and returns what is left
to say. Links keep their words, bare URLs become their site's name, and code
that is more than a plain word is left out.
"""

from __future__ import annotations

import re

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>()\"']+", re.IGNORECASE)
_EMAIL = re.compile(r"\b([\w.+-]+)@([\w-]+(?:\.[\w-]+)+)\b")
_INLINE_CODE = re.compile(r"`([^`]*)`")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
_EMPHASIS = re.compile(r"(\*{1,3}|_{2,3}|~~)(?=\S)(.+?)(?<=\S)\1")
_STRAY_MARKS = re.compile(r"[*`~]+|(?<!\w)_+|_+(?!\w)|#{2,}")
# A line's leading markup: headings, quotes, bullets and numbered list markers.
_LINE_START = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+•]\s+|\d{1,3}[.)]\s+)")
_RULE = re.compile(r"^\s*(?:[-*_=]\s*){3,}$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_PLAIN_CODE = re.compile(r"[A-Za-z][A-Za-z0-9 ]*")


def _is_emoji(char: str) -> bool:
    code = ord(char)
    return (0x1F000 <= code <= 0x1FAFF or 0x2600 <= code <= 0x27BF or 0x2300 <= code <= 0x23FF
            or 0x2B00 <= code <= 0x2BFF or code in (0xFE0F, 0xFE0E, 0x200D, 0x20E3) or 0xE0020 <= code <= 0xE007F)


def drop_emoji(text: str) -> str:
    return "".join(c for c in text if not _is_emoji(c))


def _site(match: re.Match[str]) -> str:
    url = re.sub(r"^(?:https?://)?(?:www\.)?", "", match.group(0), flags=re.IGNORECASE)
    host = re.split(r"[/?#:]", url, maxsplit=1)[0].rstrip(".")
    return " dot ".join(part for part in host.split(".") if part)


def _email(match: re.Match[str]) -> str:
    user = match.group(1).replace(".", " dot ")
    return f"{user} at {' dot '.join(match.group(2).split('.'))}"


def _inline_code(match: re.Match[str]) -> str:
    code = match.group(1).strip()
    return code if _PLAIN_CODE.fullmatch(code) else ""


def is_rule(line: str) -> bool:
    """A horizontal rule or a table's header rule: nothing to say."""
    return bool(_RULE.match(line) or _TABLE_RULE.match(line))


def strip_line_start(line: str) -> str:
    """A line without its heading, quote or list marker."""
    return _LINE_START.sub("", line, count=1)


def strip_inline(text: str) -> str:
    """Links, URLs, e-mail addresses, inline code, HTML tags, emphasis and emoji, made speakable."""
    text = _LINK.sub(r"\1", text)
    text = _URL.sub(_site, text)
    text = _EMAIL.sub(_email, text)
    text = _INLINE_CODE.sub(_inline_code, text)
    text = _HTML_TAG.sub("", text)
    previous = None
    while previous != text:  # nested emphasis: ***bold italic***, **a _b_ c**
        previous, text = text, _EMPHASIS.sub(r"\2", text)
    text = _STRAY_MARKS.sub("", text)
    if "|" in text:  # a table row: its cells, one after the other
        text = ", ".join(cell.strip() for cell in text.strip().strip("|").split("|") if cell.strip())
    return drop_emoji(text)
