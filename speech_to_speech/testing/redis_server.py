"""A throwaway ``redis-server`` on a free loopback port (no persistence), for tests and benches."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

from speech_to_speech.testing.server import free_port

INSTALL_HINT = "sudo apt-get install redis-server"


def find_redis_server() -> str | None:
    return shutil.which("redis-server")


class RedisServer:
    def __init__(self, binary: str, port: int | None = None) -> None:
        self.binary = binary
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--protected-mode", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def _answers(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
        return False

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.kill()
        process.wait(timeout=10)


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A running redis-server (raises if none is installed), stopped at the end of the block."""
    binary = find_redis_server()
    if binary is None:
        raise RuntimeError(f"no redis-server found: {INSTALL_HINT}")
    server = RedisServer(binary)
    server.start()
    try:
        yield server
    finally:
        server.stop()
