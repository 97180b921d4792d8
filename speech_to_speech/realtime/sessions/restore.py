"""A session's service set back to what the store held: its session object and its conversation.

The conversation comes back as it was, item for item with the same ids
(retrievable, transcripts and all), with the same items out of the model's
history and the same heard text for answers heard only in part: the history
the LLM is given is derived from them as it was on the old server. A
response the old server was generating when it was lost cannot go on here:
it ends as ``failed`` with ``server_lost``, and what it had said leaves the
history, as a failed response's does.
"""

from __future__ import annotations

from speech_to_speech.protocol import error_codes, error_types
from speech_to_speech.protocol.server_events.response import ResponseDone, response_done
from speech_to_speech.realtime.service.realtime_service import RealtimeService
from speech_to_speech.realtime.sessions.store import StoredSession

SERVER_LOST_MESSAGE = "The server generating this response was lost; the session was resumed on another server"


def restore_service(service: RealtimeService, stored: StoredSession) -> None:
    """Each part of ``service`` takes back what it owns, through its own methods."""
    service.restore_session(stored.session, stored.last_client_event_id)
    if stored.conversation_id is not None:
        service.responses.continue_conversation(stored.conversation_id)
    service.conversation.load(stored.conversation)
    service.playback.restore(stored.conversation.said)
    service.conversation.lost(stored.response_items)


def lost_response_done(stored: StoredSession, finished_id: str | None = None) -> ResponseDone | None:
    """The ``response.done`` of the response that was in the making when its server was lost, if one was
    and the client has not heard it end (``finished_id``: the last response it heard end)."""
    if stored.response is None or stored.response.get("id") == finished_id:
        return None
    error = {"type": error_types.SERVER_ERROR, "code": error_codes.SERVER_LOST, "message": SERVER_LOST_MESSAGE}
    body = {**stored.response, "status": "failed", "status_details": {"type": "failed", "error": error}}
    return response_done(body)
