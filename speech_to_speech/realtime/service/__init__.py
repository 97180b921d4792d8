"""One session's protocol operations: client events in, pipeline items out as Realtime events.

``RealtimeService`` puts a session together over one pipeline unit; the
client-event table maps each event to its checks and operation; the
translators turn the unit's output (turns, responses) into server events;
the send loop drains the unit's queues. May import ``conversation``,
``connection`` and ``wire``.
"""
