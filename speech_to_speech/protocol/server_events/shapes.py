"""The objects server events carry, as far as the events' own types need them.

Items, sessions and response bodies are JSON objects that the conversation
keeps changing and the wire tests check field by field against OpenAI's
schema; they stay plain ``dict[str, Any]`` here, named for what they are. The
small objects that a constructor of this package builds (an error, a content
part's address) are typed.

No ``from __future__ import annotations`` in this package: Python 3.11 reads
``NotRequired`` only from evaluated annotations, and the tests read each
event's required and optional keys at run time.
"""

import enum
from typing import Any, NotRequired, TypedDict

Item = dict[str, Any]  # a conversation item: message, function_call, mcp_call, … (realtime/wire/items.py)
Session = dict[str, Any]  # the session object of session.created, session.updated and session.resumed
ResponseBody = dict[str, Any]  # the response object of response.created and response.done
ContentPart = dict[str, Any]  # a content part: {"type": "audio", "transcript": …} or {"type": "text", …}


class Omitted(enum.Enum):
    """A field left out of an event, which is not the same on the wire as one that is null."""

    OMITTED = "omitted"


OMITTED = Omitted.OMITTED


class ContentRef(TypedDict):
    """Where a content part's events point: the response, its output item and the part in it."""

    response_id: str
    item_id: str
    output_index: int
    content_index: int


class ErrorDetail(TypedDict):
    """The ``error`` object of an ``error`` event."""

    type: str  # OpenAI's class of the error (protocol/error_types.py)
    code: str  # protocol/error_codes.py
    message: str
    param: str | None
    event_id: str | None  # the client event it answers
    retry_after_s: NotRequired[int]  # ours: a refused session may try again after this long


class TranscriptionError(TypedDict):
    """The ``error`` of a failed transcription (no client event to name)."""

    type: str
    code: str
    message: str
    param: str | None
