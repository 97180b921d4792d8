"""PlaybackAcks: when to tell the server how far each assistant item was heard (``playback.ack``).

Over WebSocket only the client knows where its speaker is. A server that
advertises ``supports_playback_ack`` uses these reports for its playback
figures and, with ``playback_commit_policy: ack_only``, to put into the LLM's
history only what the user heard. A stock server would answer an unknown
event with an error, so nothing is sent unless the capability was seen.

The rules: an ack is cumulative (the item's play head in ms) and never says
more than was played; per item at most one every ``interval_s`` while it
plays, and one at once when it settles (played to its end, or cut), so the
last words are never left unreported. No I/O: the session feeds play heads
in and sends the events that come out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from speech_to_speech.client.playback import ItemProgress
from speech_to_speech.protocol import Event

ACK_INTERVAL_S = 0.25


class PlaybackAcks:
    def __init__(self, interval_s: float = ACK_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.enabled = False  # the server said supports_playback_ack
        self._acked: dict[str, int] = {}  # item -> the last played_ms we reported
        self._sent_at: dict[str, float] = {}  # item -> when
        self._server_ms: dict[str, int] = {}  # item -> the audio_duration_ms the server gave for it
        self._settled: set[str] = set()  # items with nothing more to report

    def capabilities(self, capabilities: dict[str, Any]) -> None:
        """``session.created``'s ``session.capabilities``: acks go out only if the server takes them."""
        self.enabled = capabilities.get("supports_playback_ack") is True

    def audio_duration(self, item_id: str, audio_duration_ms: object) -> None:
        """The server's length of the item so far (delta ``metadata``): an ack never goes past it."""
        if isinstance(audio_duration_ms, int) and not isinstance(audio_duration_ms, bool):
            self._server_ms[item_id] = max(self._server_ms.get(item_id, 0), audio_duration_ms)

    def due(self, progress: Iterable[ItemProgress], now: float) -> list[Event]:
        """The ``playback.ack`` events to send now, given every item's play head."""
        if not self.enabled:
            return []
        acks = []
        for item in progress:
            if item.item_id in self._settled:
                continue
            played = item.played_ms
            if item.item_id in self._server_ms:
                played = min(played, self._server_ms[item.item_id])
            last = self._acked.get(item.item_id, 0)
            waited = now - self._sent_at.get(item.item_id, float("-inf")) >= self.interval_s
            if played > last and (item.settled or waited):
                acks.append({"type": "playback.ack", "response_id": item.response_id, "item_id": item.item_id,
                             "played_ms": played})
                self._acked[item.item_id] = played
                self._sent_at[item.item_id] = now
            if item.settled:
                self._settled.add(item.item_id)
                self._acked.pop(item.item_id, None)
                self._sent_at.pop(item.item_id, None)
                self._server_ms.pop(item.item_id, None)
        return acks
