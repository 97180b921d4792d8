"""What a resume and its answer say beyond the cursor, so that nothing is lost or said twice across a drop.

A client event sent as a connection dies never reaches the server: TCP took
it, the socket went. ``session.resumed`` therefore carries
``last_client_event_id``, the ``event_id`` of the last client event the
session took (null: none yet), so the client can send again what it sent
after that one. Streams are left out on both sides: an audio append is
stale once late, and a heartbeat or an ack is replaced by the next one.
"""

LAST_CLIENT_EVENT_ID = "last_client_event_id"
STREAMED_CLIENT_EVENTS = frozenset({"input_audio_buffer.append", "session.heartbeat", "session.event_ack",
                                    "playback.ack"})

# In session.resume: the response whose response.done the client has last received. A replica that
# resumes a session whose server died ends the response that server was generating, unless the client
# says it has heard it end (the dead server sent its response.done but had not stored it yet).
LAST_FINISHED_RESPONSE_ID = "last_finished_response_id"
