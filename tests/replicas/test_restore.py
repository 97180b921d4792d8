"""The response a lost server was generating is ended on the replica that resumes it, once."""

from __future__ import annotations

from speech_to_speech.realtime.conversation.history import ConversationState
from speech_to_speech.realtime.sessions.restore import lost_response_done
from speech_to_speech.realtime.sessions.store import StoredSession


def _stored(response: dict[str, str] | None) -> StoredSession:
    return StoredSession("sess_1", {"id": "sess_1"}, ConversationState(()), (), 0, 9, response)


def test_the_response_in_the_making_ends_failed_with_server_lost_unless_the_client_heard_it_end() -> None:
    stored = _stored({"id": "resp_2", "object": "realtime.response", "status": "in_progress"})
    for finished in (None, "resp_1"):  # nothing heard to end, or an earlier response
        done = lost_response_done(stored, finished)
        assert done is not None and done["type"] == "response.done"
        assert done["response"]["id"] == "resp_2" and done["response"]["status"] == "failed"
        assert done["response"]["status_details"]["error"]["code"] == "server_lost"
    # Its server sent response.done, then died before the store had it: the client has the end already.
    assert lost_response_done(stored, "resp_2") is None
    assert lost_response_done(_stored(None), None) is None
