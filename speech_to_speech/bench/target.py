"""The server a benchmark talks to: one at ``--url``, or one it starts in this process."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from speech_to_speech.config import ServerSettings


@dataclass(frozen=True)
class Target:
    ws_url: str
    http_url: str
    # The settings the server runs with when we started it; None for a server at --url.
    settings: ServerSettings | None

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
def target(url: str | None, settings: ServerSettings) -> Iterator[Target]:
    """The server at ``url``; without one, a server for ``settings`` on a free loopback port."""
    if url:
        yield Target(url, http_url_of(url), None)
        return
    # Imported here: a bench against --url needs no models or app.
    from speech_to_speech.testing.server import running_server

    with running_server(settings) as server:
        yield Target(server.ws_url, server.http_url, settings.model_copy(update={"port": server.port}))
