"""The ``type`` of an ``error`` event: OpenAI's class of the error, which clients branch on."""

INVALID_REQUEST_ERROR = "invalid_request_error"  # the client's event or request was wrong
SERVER_ERROR = "server_error"  # the server failed
RATE_LIMIT_ERROR = "rate_limit_error"  # one client opened sessions too fast
