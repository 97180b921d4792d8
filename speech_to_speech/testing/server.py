"""Run a real server on a free loopback port in a background thread (tests, benches)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from speech_to_speech.config import ServerSettings
from speech_to_speech.realtime.app.server import build_app
from speech_to_speech.realtime.app.serving import RealtimeServer
from speech_to_speech.units.pool import PipelinePool


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class RunningServer:
    host: str
    port: int
    pool: PipelinePool

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}/v1/realtime"


@contextlib.contextmanager
def serving(app: Any, port: int, startup_timeout: float = 30.0, max_event_bytes: int = 16 * 1024 * 1024,
            host: str = "127.0.0.1") -> Iterator[None]:
    """Serve an ASGI app with uvicorn on ``host``:``port`` in a thread, for the block's duration."""
    server = RealtimeServer(app, host=host, port=port, log_level="warning", max_event_bytes=max_event_bytes)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the server on port {port} did not start")
        time.sleep(0.02)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def running_server(settings: ServerSettings, port: int | None = None) -> Iterator[RunningServer]:
    """Build the real app for ``settings`` (loading its models) and serve it on ``port`` or a free one."""
    settings = settings.updated(host="127.0.0.1", port=port or free_port())
    app, pool = build_app(settings)
    try:
        with serving(app, settings.server.port, max_event_bytes=settings.limits.max_event_bytes):
            yield RunningServer(settings.server.host, settings.server.port, pool)
    finally:
        pool.close()
