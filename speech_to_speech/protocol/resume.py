"""What a resume tells a client of its own events, so that none is lost with a dropped connection.

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
