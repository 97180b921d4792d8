"""Parsing of client events: JSON in, a typed envelope out, or a protocol error."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from speech_to_speech.realtime.errors import UNKNOWN_OR_INVALID_EVENT, RealtimeError


@dataclass(frozen=True)
class ClientEvent:
    type: str
    event_id: str | None
    data: dict[str, Any]


def parse_client_event(raw: str | bytes | dict[str, Any], known: Collection[str]) -> ClientEvent:
    """The envelope of a client event whose type is one of ``known``, or a protocol error."""
    if isinstance(raw, dict):
        data = raw
    else:
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise RealtimeError(UNKNOWN_OR_INVALID_EVENT, "The event is not valid JSON") from None
    if not isinstance(data, dict):
        raise RealtimeError(UNKNOWN_OR_INVALID_EVENT, "An event must be a JSON object")
    event_id = data.get("event_id")
    event_id = event_id if isinstance(event_id, str) else None
    kind = data.get("type")
    if not isinstance(kind, str):
        raise RealtimeError(UNKNOWN_OR_INVALID_EVENT, "The event has no 'type'", event_id=event_id)
    if kind not in known:
        raise RealtimeError(
            UNKNOWN_OR_INVALID_EVENT, f"Unknown or unsupported event type {kind!r}", param="type", event_id=event_id
        )
    return ClientEvent(kind, event_id, data)
