"""Run a real server on a free loopback port in a background thread (tests, benches)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn

from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.pool import PipelinePool
from speech_to_speech.realtime.server import build_app


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
def running_server(settings: ServerSettings, startup_timeout: float = 120.0) -> Iterator[RunningServer]:
    settings = settings.model_copy(update={"host": "127.0.0.1", "port": settings.port or free_port()})
    app, pool = build_app(settings)
    server = uvicorn.Server(uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning",
                                           ws_max_size=16 * 1024 * 1024))
    thread = threading.Thread(target=server.run, name="test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield RunningServer(settings.host, settings.port, pool)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        pool.close()
