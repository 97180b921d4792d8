"""A stand-in for the model hub on loopback: a tiny file tree served the way the hub serves files.

``huggingface_hub`` fetches ``{HF_ENDPOINT}/{repo}/resolve/{revision}/{path}``:
first a HEAD, whose ``X-Repo-Commit`` and ``ETag`` name the cached copy,
then a GET of the bytes. Tests point ``HF_ENDPOINT`` here (and ``HF_HOME`` at
a temporary folder) so the code that fetches voices runs for real without a
network; every request is recorded, and a path not in the tree is a 404
as on the hub.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

COMMIT = "0" * 40  # the revision every file of the stand-in is at


@dataclass
class HubStandIn:
    """``files``: "repo/id/path/in/repo" -> bytes; ``requests``: (method, path) of each request, in order."""

    files: dict[str, bytes]
    url: str = ""
    requests: list[tuple[str, str]] = field(default_factory=list)

    def lookup(self, path: str) -> bytes | None:
        # /{owner}/{name}/resolve/{revision}/{file path}
        parts = unquote(path.split("?")[0]).strip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return None
        return self.files.get("/".join(parts[:2] + parts[4:]))


def _handler(hub: HubStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, with_body: bool) -> None:
            hub.requests.append((self.command, self.path))
            body = hub.lookup(self.path)
            if body is None:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("ETag", f'"{hashlib.sha256(body).hexdigest()}"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._answer(with_body=False)

        def do_GET(self) -> None:
            self._answer(with_body=True)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def hub_stand_in(files: dict[str, bytes]) -> Iterator[HubStandIn]:
    """Serve ``files`` on a free loopback port for the duration of the block."""
    hub = HubStandIn(files)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="hub-stand-in", daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
