"""The server a benchmark talks to: one at ``--url``, or one it starts.

A started server runs as a child process by default (``speech-to-speech
serve`` with the same settings): in this process it would share the GIL with
the benchmark's clients, and at 48 sessions that contention alone adds
hundreds of ms to p95. ``in-process`` is quicker to start (tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx
import yaml

from speech_to_speech.config import ServerSettings, flat_settings

ServerMode = Literal["subprocess", "in-process"]
START_TIMEOUT_S = 300.0  # loading the real models on a busy 2-core machine


@dataclass(frozen=True)
class Target:
    ws_url: str
    http_url: str
    # The settings the server runs with when we started it; None for a server at --url.
    settings: ServerSettings | None
    mode: ServerMode | None = None  # how we started it

    def get(self, path: str) -> Any:
        response = httpx.get(self.http_url + path, timeout=10.0)
        response.raise_for_status()
        return response.json()

    def pipeline(self) -> dict[str, Any]:
        """The server's backends and models, as ``/v1/models`` reports them."""
        models = self.get("/v1/models").get("data") or [{}]
        return dict(models[0].get("pipeline") or {})

    def pool_size(self) -> int:
        return int(self.get("/v1/pool")["size"])

    async def wait_idle(self, timeout: float = 30.0) -> None:
        """Until every pipeline unit is idle again (the last sessions drained)."""
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=10.0) as http:
            while True:
                pool = (await http.get(self.http_url + "/v1/pool")).json()
                if pool["available"] == pool["size"]:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"pipeline units still busy after {timeout}s: {pool['pipelines']}")
                await asyncio.sleep(0.05)


def http_url_of(ws_url: str) -> str:
    """``ws://host:port/v1/realtime`` -> ``http://host:port``."""
    parts = urlsplit(ws_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "", "", ""))


@contextlib.contextmanager
def target(url: str | None, settings: ServerSettings, mode: ServerMode = "subprocess") -> Iterator[Target]:
    """The server at ``url``; without one, a server for ``settings`` on a free loopback port."""
    if url:
        yield Target(url, http_url_of(url), None)
        return
    if mode == "in-process":
        # Imported here: a bench against --url needs no models or app.
        from speech_to_speech.testing.server import running_server

        with running_server(settings) as server:
            yield Target(server.ws_url, server.http_url, settings.updated(port=server.port), mode)
        return
    with started(settings) as (server, _):
        yield server


@dataclass(frozen=True)
class Child:
    """A ``serve`` child process, and when (monotonic seconds) it was spawned and answered /health."""

    process: subprocess.Popen[bytes]
    spawned: float
    ready: float


def serve_command() -> list[str]:
    """``speech-to-speech serve``: the console script beside this Python (what a user runs), else ``-m``."""
    script = Path(sys.executable).with_name("speech-to-speech")
    return [str(script), "serve"] if script.exists() else [sys.executable, "-m", "speech_to_speech", "serve"]


@contextlib.contextmanager
def started(settings: ServerSettings) -> Iterator[tuple[Target, Child]]:
    """A child server for ``settings`` on a free loopback port: its target and its process."""
    from speech_to_speech.testing.server import free_port

    settings = settings.updated(host="127.0.0.1", port=free_port())
    with child_server(settings) as child:
        address = f"{settings.server.host}:{settings.server.port}"
        yield Target(f"ws://{address}/v1/realtime", f"http://{address}", settings, "subprocess"), child


@contextlib.contextmanager
def child_server(settings: ServerSettings) -> Iterator[Child]:
    """``speech-to-speech serve`` for ``settings`` (passed as a YAML file), until it answers /health."""
    with tempfile.TemporaryDirectory(prefix="s2s-bench-") as folder:
        config = Path(folder) / "server.yaml"
        config.write_text(yaml.safe_dump({"server": flat_settings(settings, exclude_defaults=True)}))
        spawned = time.monotonic()
        child = subprocess.Popen([*serve_command(), "--config", str(config)])
        try:
            ready = _wait_healthy(child, f"http://{settings.server.host}:{settings.server.port}/health")
            yield Child(child, spawned, ready)
        finally:
            child.terminate()
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _wait_healthy(child: subprocess.Popen[bytes], url: str) -> float:
    """When (monotonic) ``url`` first answered 200; polled often, so startup times are not rounded up."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if child.poll() is not None:
            raise RuntimeError(f"the server exited with code {child.returncode} before it was ready")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2.0).status_code == 200:
                return time.monotonic()
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server was not ready within {START_TIMEOUT_S:.0f}s")
        time.sleep(0.05)
