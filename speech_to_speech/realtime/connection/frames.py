"""Server events as they leave: serialised once, immutable from then on.

A server event is a dict while a session builds it, and may share data with
the session's state (an item that goes on changing). The moment it is
emitted it becomes a :class:`Frame`: its compact JSON text, fixed for good,
so a queue, the replay journal and every socket that ever carries it send
the same bytes, whatever happens to the state afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech import ids
from speech_to_speech.realtime.connection.transport import dumps


@dataclass(frozen=True)
class Frame:
    """One serialised server event: what a transport sends as one text frame."""

    text: str
    type: str
    seq: int | None = None  # server_event_seq; None for connection-level events (never journaled)
    size: int = field(default=0, compare=False)  # bytes of the UTF-8 text: what output limits count

    def __post_init__(self) -> None:
        if not self.size:
            object.__setattr__(self, "size", len(self.text.encode()))


def stamped(event: Mapping[str, Any], seq: int | None = None) -> dict[str, Any]:
    """``event`` with an ``event_id`` (kept if it has one) and, for session events, its ``server_event_seq``."""
    head: dict[str, Any] = {} if "event_id" in event else {"event_id": ids.event_id()}
    tail: dict[str, Any] = {} if seq is None else {"server_event_seq": seq}
    return {**head, **event, **tail}


def to_frame(event: Mapping[str, Any], seq: int | None = None) -> Frame:
    """Stamp and serialise ``event``; ``seq`` None makes a connection-level frame (no server_event_seq)."""
    return Frame(dumps(stamped(event, seq)), str(event.get("type")), seq)
