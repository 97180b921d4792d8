"""The type of one Realtime event as a client reads it, or sends it: any JSON object.

The server builds the events it sends with the typed constructors of
:mod:`speech_to_speech.protocol.server_events`; this is the loose view of the
other side (the client, the tests, the benches), which read whatever arrives.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]
