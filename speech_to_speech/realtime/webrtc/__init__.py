"""WebRTC: ``POST /v1/realtime/calls`` signalling, one aiortc call per session, its media and liveness.

A call serves one Realtime session over a peer connection and its data
channel, as the WebSocket does over a socket. May import ``sessions``,
``service``, ``connection``, ``wire`` and ``metrics``; only ``app`` imports it.
"""
