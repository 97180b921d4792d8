"""The one uvicorn setup: frame cap, and a shutdown that ends sessions before connections.

A shutdown first stops the session gate (new sessions and resumes are
refused, ``GET /ready`` answers 503), then every live session gets an
``error`` (``server_shutting_down``), what was queued for it, and a close;
only then does uvicorn stop its connections and the app's lifespan, all
within ``drain_s``. The close says which shutdown it is:

- SIGTERM is what an orchestrator sends to restart or move a replica: the
  gate stops the moment the signal lands, and the close is 1012 (service
  restart), which tells a client to reconnect and resume, elsewhere;
- SIGINT (Ctrl-C) or the embedding code's ``should_exit`` (``local``) is
  the server going away: 1001. A second SIGINT stops waiting.

A SIGTERM ends the process with exit code 0 (uvicorn would re-raise it).
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import socket
import time
from collections.abc import Generator
from types import FrameType
from typing import Any

import uvicorn

from speech_to_speech.realtime.app.context import server_context
from speech_to_speech.realtime.sessions.runner import RESTART, SHUTDOWN

log = logging.getLogger(__name__)

# A frame a little over the event cap still gets an ``event_too_large`` error; far larger ones are
# cut by the transport (close 1009) before they are read into memory.
FRAME_MARGIN_BYTES = 1024 * 1024
DEFAULT_DRAIN_S = 10.0
# uvicorn's wait for connections gets at least this, even when the sessions used up the drain.
MIN_CONNECTION_WAIT_S = 1


class _QuietDenials(logging.Filter):
    """uvicorn (0.54, websockets-sansio) logs an ERROR for every WebSocket refused at the handshake with an
    HTTP response (the ASGI denial extension), as if the app had failed; the refusals are deliberate."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."


_DENIAL_FILTER = _QuietDenials()


class RealtimeServer(uvicorn.Server):
    def __init__(self, app: Any, *, host: str, port: int, log_level: str, max_event_bytes: int,
                 drain_s: float = DEFAULT_DRAIN_S) -> None:
        super().__init__(uvicorn.Config(app, host=host, port=port, log_level=log_level,
                                        ws_max_size=max_event_bytes + FRAME_MARGIN_BYTES))
        self.app = app
        self.drain_s = drain_s
        self.restarting = False  # the shutdown is a SIGTERM's: sessions close with 1012
        logging.getLogger("uvicorn.error").addFilter(_DENIAL_FILTER)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM and not self.should_exit:
            self.restarting = True
        self._stop_admitting()  # now, not at the next tick: a balancer's probe may come in between
        super().handle_exit(sig, frame)

    def _stop_admitting(self) -> None:
        context = server_context(self.app)
        if context is not None:
            context.gate.stop("the server is restarting" if self.restarting else "the server is shutting down")

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        deadline = time.monotonic() + self.drain_s
        self._stop_admitting()
        context = server_context(self.app)
        if context is not None:
            sessions = context.sessions
            closing = RESTART if self.restarting else SHUTDOWN
            log.info("shutdown (%s): closing %d session(s) with code %d, for up to %g s", closing.reason, len(sessions),
                     closing.code, self.drain_s)
            await sessions.close_all(closing, timeout=self.drain_s)
        # uvicorn's setting is whole seconds: round what is left of the drain up.
        self.config.timeout_graceful_shutdown = max(MIN_CONNECTION_WAIT_S, math.ceil(deadline - time.monotonic()))
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        with super().capture_signals():
            yield
            # A SIGTERM was handled by shutting down cleanly: exit 0 instead of dying of it now.
            self._captured_signals = [s for s in self._captured_signals if s != signal.SIGTERM]
