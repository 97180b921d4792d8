"""A ``speech-to-speech serve`` process with scripted stages on a free loopback port (replica tests, benches)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

from speech_to_speech.testing.server import free_port

SCRIPTED_FLAGS = ["--vad", "scripted", "--stt", "scripted", "--llm", "scripted", "--tts", "scripted",
                  "--min_silence_ms", "300", "--speech_pad_ms", "100", "--scripted_tts_ms_per_char", "10"]


class ServeProcess:
    """``flags`` come after ``base`` (the scripted stages, unless given others), so they win over it."""

    def __init__(self, *flags: str, base: tuple[str, ...] | list[str] = tuple(SCRIPTED_FLAGS)) -> None:
        self.port = free_port()
        self.flags = flags
        self.base = tuple(base)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/realtime"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ServeProcess:
        """Start it (again, after a kill: on the same port) and wait until /health answers."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "speech_to_speech", "serve", "--host", "127.0.0.1", "--port", str(self.port),
             *self.base, *self.flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.http_url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("serve did not start")
            time.sleep(0.1)

    def metrics(self) -> str:
        return httpx.get(f"{self.http_url}/metrics", timeout=5).text

    def kill(self) -> None:
        """SIGKILL: the server is lost, nothing of it runs on."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
