"""The one uvicorn setup: frame cap, and a shutdown that ends sessions before connections.

On SIGTERM (or SIGINT) every live session first gets an ``error``
(``server_shutting_down``), what was queued for it, and a close (1001);
only then does uvicorn stop its connections and the app's lifespan. A
SIGTERM ends the process with exit code 0 (uvicorn would re-raise it).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
from collections.abc import Generator
from typing import Any

import uvicorn

# A frame a little over the event cap still gets an ``event_too_large`` error; far larger ones are
# cut by the transport (close 1009) before they are read into memory.
FRAME_MARGIN_BYTES = 1024 * 1024


class _QuietDenials(logging.Filter):
    """uvicorn (0.54, websockets-sansio) logs an ERROR for every WebSocket refused at the handshake with an
    HTTP response (the ASGI denial extension), as if the app had failed; the refusals are deliberate."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."


_DENIAL_FILTER = _QuietDenials()


class RealtimeServer(uvicorn.Server):
    def __init__(self, app: Any, *, host: str, port: int, log_level: str, max_event_bytes: int) -> None:
        super().__init__(uvicorn.Config(app, host=host, port=port, log_level=log_level,
                                        ws_max_size=max_event_bytes + FRAME_MARGIN_BYTES))
        self.app = app
        logging.getLogger("uvicorn.error").addFilter(_DENIAL_FILTER)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        sessions = getattr(getattr(self.app, "state", None), "sessions", None)
        if sessions is not None:
            await sessions.close_all()
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        with super().capture_signals():
            yield
            # A SIGTERM was handled by shutting down cleanly: exit 0 instead of dying of it now.
            self._captured_signals = [s for s in self._captured_signals if s != signal.SIGTERM]
