"""``playback.ack``: a client reports how far it played an answer, and how much of it counts.

Only the client knows where its speaker is (WebSocket audio is played on the
client's side, at its pace, after its buffering). It reports the play head of
one assistant item as cumulative positions in ms:

- ``played_ms``: audio played so far;
- ``committed_ms`` (default ``played_ms``, at most it): how much the history
  may take; with ``playback_commit_policy: ack_only`` the answer enters the
  LLM's history only this far (in whole words, by the item's text marks);
- ``truncate: true``: the user heard no more than ``played_ms`` (an
  interruption): the item is cut there, as ``conversation.item.truncate``
  would, and positions may move back. Otherwise they only move forward.

Every check failure is a protocol error carrying the ack's ``event_id``; the
session goes on. The answer, ``playback.acknowledged``, repeats the positions
and gives the response's figures (``playback``).
"""

from __future__ import annotations

from typing import Any

from speech_to_speech.protocol import error_codes
from speech_to_speech.protocol.server_events.playback import PlaybackAcknowledged, playback_acknowledged
from speech_to_speech.realtime.conversation.item_audio import ItemAudio, duration_ms
from speech_to_speech.realtime.conversation.playback import Playback
from speech_to_speech.realtime.wire.errors import RealtimeError


def _ms(data: dict[str, Any], key: str, default: int | None = None) -> int:
    value = data.get(key)
    value = default if value is None else value  # an optional field sent as null is left out
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RealtimeError(error_codes.INVALID_VALUE, f"'{key}' must be a non-negative integer of milliseconds",
                            param=key)
    return value


def _item_of(playback: Playback, data: dict[str, Any], active_response: str | None) -> tuple[str, str | None]:
    """The acked response and item (None: a response with no audio yet); raises RealtimeError."""
    response_id = data.get("response_id")
    if not isinstance(response_id, str) or not response_id:
        raise RealtimeError(error_codes.INVALID_VALUE, "'response_id' must name a response", param="response_id")
    playback.forget_stale()  # a deleted item's acks are refused
    items = playback.items_of(response_id)
    if items is None and response_id != active_response:
        raise RealtimeError(error_codes.RESPONSE_NOT_FOUND, f"Response {response_id!r} not found (or forgotten)",
                            param="response_id")
    items = items or []
    item_id = data.get("item_id")
    if item_id is None:
        if len(items) > 1:
            raise RealtimeError(error_codes.INVALID_VALUE, f"Response {response_id!r} has {len(items)} audio items: "
                                "name one with 'item_id'", param="item_id")
        return response_id, items[0] if items else None
    if not isinstance(item_id, str) or item_id not in items:
        raise RealtimeError(error_codes.ITEM_NOT_FOUND, f"Response {response_id!r} has no audio item {item_id!r}",
                            param="item_id")
    return response_id, item_id


def acknowledge(playback: Playback, data: dict[str, Any], *, active_response: str | None,
                session_id: str | None) -> PlaybackAcknowledged:
    """Check and record one ``playback.ack``; returns its ``playback.acknowledged``. Raises RealtimeError."""
    response_id, item_id = _item_of(playback, data, active_response)
    played = _ms(data, "played_ms")
    committed = _ms(data, "committed_ms", played)
    truncate = data.get("truncate")
    truncate = False if truncate is None else truncate
    if not isinstance(truncate, bool):
        raise RealtimeError(error_codes.INVALID_VALUE, "'truncate' must be true or false", param="truncate")
    if committed > played:
        raise RealtimeError(error_codes.INVALID_VALUE, f"'committed_ms' ({committed}) is past 'played_ms' ({played}): "
                            "only audio that was played can be committed", param="committed_ms")
    entry = playback.item(item_id) if item_id is not None else None
    generated = duration_ms(entry.produced) if entry is not None else 0
    if played > generated:
        raise RealtimeError(error_codes.INVALID_VALUE, f"'played_ms' ({played}) is past the {generated}ms of audio "
                            "this item has", param="played_ms")
    if entry is not None and not truncate:
        _forward_only(entry, played, committed)
    playback.acknowledged(item_id, played, committed, truncate)
    return _acknowledged(playback, response_id, item_id, entry, truncate, session_id)


def _forward_only(entry: ItemAudio, played: int, committed: int) -> None:
    for key, before, now in (("played_ms", entry.played_ms, played), ("committed_ms", entry.committed_ms, committed)):
        if now < before:
            raise RealtimeError(error_codes.INVALID_VALUE, f"'{key}' ({now}) is behind the {before}ms acknowledged "
                                "before: positions only move forward unless 'truncate' is true", param=key)


def _acknowledged(playback: Playback, response_id: str, item_id: str | None, entry: ItemAudio | None,
                  truncate: bool, session_id: str | None) -> PlaybackAcknowledged:
    history_committed = False
    if entry is not None and entry.done and item_id is not None:
        item = playback.conversation.get(item_id)
        heard = playback.history_text(item_id, item) if item is not None else None
        full = ((item or {}).get("content") or [{}])[0].get("transcript") or ""
        history_committed = item is not None and (heard is None or heard == full)
    return playback_acknowledged(session_id, response_id, item_id,
                                 played_ms=entry.played_ms if entry is not None else 0,
                                 committed_ms=entry.committed_ms if entry is not None else 0, truncate=truncate,
                                 playback=playback.figures(response_id), history_committed=history_committed)
