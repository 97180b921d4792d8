"""Parsing of client events: JSON in, a typed envelope out, or a protocol error.

Hostile input stops here: a frame over the size cap, JSON nested deeper than
the depth cap (or deep enough to exhaust the parser), a non-object, a missing
or unknown ``type``. Each becomes a :class:`RealtimeError` that names the
event's ``event_id`` whenever one can be read, even from a frame that is not
parsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from speech_to_speech.protocol.error_codes import EVENT_TOO_LARGE, UNKNOWN_OR_INVALID_EVENT
from speech_to_speech.realtime.wire.errors import RealtimeError

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_DEPTH = 32

# The event_id of a frame that is not parsed (too large, too deep, broken): its first string value.
_EVENT_ID = re.compile(r'"event_id"\s*:\s*"([^"\\]{1,256})"')


@dataclass(frozen=True)
class ClientEvent:
    type: str
    event_id: str | None
    data: dict[str, Any]
    audio: Any = None  # an append's audio, decoded to 16 kHz float32 before the event is applied


@dataclass(frozen=True)
class EventLimits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH


def sniff_event_id(raw: str | bytes) -> str | None:
    """The ``event_id`` of an unparsed frame, if it has a plain one."""
    text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    match = _EVENT_ID.search(text)
    return match.group(1) if match else None


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects/arrays deeper than ``limit`` levels (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def parse_client_event(raw: str | bytes | dict[str, Any], known: Collection[str],
                       limits: EventLimits = EventLimits()) -> ClientEvent:
    """The envelope of a client event whose type is one of ``known``, or a protocol error."""
    if isinstance(raw, dict):
        data = raw
    else:
        if len(raw) > limits.max_bytes:
            raise RealtimeError(EVENT_TOO_LARGE,
                                f"The event is {len(raw)} bytes; this server takes at most {limits.max_bytes}",
                                event_id=sniff_event_id(raw))
        try:
            data = json.loads(raw)
        except RecursionError:
            raise RealtimeError(UNKNOWN_OR_INVALID_EVENT, "The event nests too deeply",
                                event_id=sniff_event_id(raw)) from None
        except (ValueError, UnicodeDecodeError):
            raise RealtimeError(UNKNOWN_OR_INVALID_EVENT, "The event is not valid JSON",
                                event_id=sniff_event_id(raw)) from None
    if not isinstance(data, dict):
        raise RealtimeError(UNKNOWN_OR_INVALID_EVENT, "An event must be a JSON object")
    event_id = data.get("event_id")
    event_id = event_id if isinstance(event_id, str) else None
    if depth_exceeds(data, limits.max_depth):
        raise RealtimeError(UNKNOWN_OR_INVALID_EVENT,
                            f"The event nests deeper than {limits.max_depth} levels", event_id=event_id)
    kind = data.get("type")
    if not isinstance(kind, str):
        raise RealtimeError(UNKNOWN_OR_INVALID_EVENT, "The event has no 'type'", event_id=event_id)
    if kind not in known:
        raise RealtimeError(
            UNKNOWN_OR_INVALID_EVENT, f"Unknown or unsupported event type {kind!r}", param="type", event_id=event_id
        )
    return ClientEvent(kind, event_id, data)
