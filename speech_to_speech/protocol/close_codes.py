"""WebSocket close codes (RFC 6455) that the server sends and the client reads."""

from __future__ import annotations

NORMAL_CLOSURE = 1000
GOING_AWAY = 1001
NO_STATUS_RECEIVED = 1005  # a close frame without a code
ABNORMAL_CLOSURE = 1006  # the connection lost without a close frame
POLICY_VIOLATION = 1008
INTERNAL_ERROR = 1011
SERVICE_RESTART = 1012  # the server restarts (SIGTERM): reconnect, on another replica, and resume
TRY_AGAIN_LATER = 1013  # what a browser refused by the session gate gets
