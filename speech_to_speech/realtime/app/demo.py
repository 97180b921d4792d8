"""The browser demo at ``/demo``: a static page, served beside the Realtime endpoints it talks to.

The page is built from ``demo/`` (TypeScript, the stock ``@openai/agents`` SDK, bundled by
esbuild) into ``speech_to_speech/demo_static/``, which is committed and shipped as package data,
so a pip-installed server serves the same page with no Node.js and nothing fetched at run time.
``make demo`` rebuilds it; ``--no-demo`` turns the route off.
"""

from __future__ import annotations

import logging
import mimetypes
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles

log = logging.getLogger(__name__)

DEMO_PATH = "/demo"
STATIC_DIR = Path(__file__).resolve().parents[2] / "demo_static"  # speech_to_speech/demo_static

# Module scripts must come with a JavaScript type; some systems' MIME tables map .js to text/plain.
mimetypes.add_type("text/javascript", ".js")


class _DemoFiles(StaticFiles):
    """Static files that browsers revalidate, so a server upgrade never runs a stale page."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "no-cache"
        return response


def mount_demo(app: FastAPI, static_dir: Path = STATIC_DIR) -> bool:
    """Serve the demo at ``/demo/`` (``/demo`` redirects there, query kept); False if it is not built."""
    if not (static_dir / "index.html").is_file():
        log.warning("the browser demo is not built (%s has no index.html): run `make demo`", static_dir)
        return False

    @app.get(DEMO_PATH, include_in_schema=False)
    def demo_without_slash(request: Request) -> RedirectResponse:
        # Relative ("demo/"), so the page also works behind a proxy that serves the server under a prefix.
        query = request.url.query
        return RedirectResponse("demo/" + (f"?{query}" if query else ""), status_code=307)

    app.mount(DEMO_PATH, _DemoFiles(directory=static_dir, html=True), name="demo")
    return True
