"""The OpenAI Realtime protocol over a pipeline unit, in rooms that each import only the rooms below them.

- ``app``: ``serve``, the FastAPI app and its routes, who may connect;
- ``webrtc``: ``POST /v1/realtime/calls`` and the calls it opens;
- ``sessions``: session lifetime: admission, the live session, resume, the replay journal and its stores;
- ``service``: one session's operations: client events in, pipeline items out as Realtime events;
- ``conversation``: conversation state: items, responses, speculation, overlap, playback truth;
- ``connection``: the transport interface, serialised frames, the outbound queue, wire audio formats;
- ``wire``: the wire contract as the server enforces it (parsing, errors, the session object, limits);
- ``metrics``: the Prometheus metrics, beside ``wire`` at the bottom.

The order is a contract of ``make lint`` (``pyproject.toml``, ``[tool.importlinter]``).
"""
