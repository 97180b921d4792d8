"""The client events sent on a connection, kept until a resume says which ones the server took.

A connection can die with events in flight: TCP accepted them, the server
never read them. ``session.resumed`` names the last one it took
(``last_client_event_id``, protocol/resume.py); what was sent after that is
sent again, first, on the new connection. Streams (audio appends,
heartbeats, acks) are not kept: late, they are stale or replaced.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

from speech_to_speech.protocol.resume import LAST_CLIENT_EVENT_ID, STREAMED_CLIENT_EVENTS

log = logging.getLogger(__name__)

# Events kept for a resume: far more than a connection holds in flight.
KEEP = 256


class SentEvents:
    def __init__(self, keep: int = KEEP) -> None:
        self._sent: deque[dict[str, Any]] = deque(maxlen=keep)

    def sent(self, event: dict[str, Any]) -> None:
        if event.get("type") not in STREAMED_CLIENT_EVENTS:
            self._sent.append(event)

    def lost(self, resumed: Mapping[str, Any]) -> list[dict[str, Any]]:
        """What the server did not take before the connection went, in order, to be sent again.

        Nothing where the server does not say (one that predates the field), or names an event
        we no longer hold (we cannot tell what came after it).
        """
        sent, self._sent = list(self._sent), deque(maxlen=self._sent.maxlen)
        if LAST_CLIENT_EVENT_ID not in resumed:
            return []
        taken = resumed[LAST_CLIENT_EVENT_ID]
        if taken is None:
            return sent
        ids = [event.get("event_id") for event in sent]
        if taken not in ids:
            if sent:
                log.warning("the server took client event %r, which is no longer held: %d sent event(s) are "
                            "not sent again", taken, len(sent))
            return []
        return sent[ids.index(taken) + 1:]
