"""What a wait of the test client looks for: an event type, or a predicate on an event."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from speech_to_speech.protocol import Event

Match = str | Callable[[Event], bool]


def matcher(match: Match) -> Callable[[Event], bool]:
    """An event type name, or any predicate on an event."""
    if isinstance(match, str):
        return lambda event: event.get("type") == match
    return match


def types(events: Iterable[Event]) -> list[str]:
    """The type of each event, in order (what a failed wait says it saw)."""
    return [str(event.get("type")) for event in events]


def _is_error_for(event: Event, event_id: str) -> bool:
    return event.get("type") == "error" and (event.get("error") or {}).get("event_id") == event_id


def is_error_for(event_id: str, code: str | None = None) -> Callable[[Event], bool]:
    """Matches the ``error`` event answering the client event ``event_id`` (with ``code``)."""

    def match(event: Event) -> bool:
        return _is_error_for(event, event_id) and (code is None or event["error"].get("code") == code)

    return match


def of_response(response_id: str, *kinds: str) -> Callable[[Event], bool]:
    """Matches events of one response (optionally of the given types)."""

    def match(event: Event) -> bool:
        rid = event.get("response_id") or (event.get("response") or {}).get("id")
        return rid == response_id and (not kinds or event.get("type") in kinds)

    return match
