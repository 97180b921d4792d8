"""``serve`` serves the browser demo at /demo from package data; ``--no-demo`` turns it off."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from speech_to_speech.cli import build_parser, settings_from_args
from speech_to_speech.config import ServerSettings
from speech_to_speech.realtime.app.demo import STATIC_DIR, mount_demo
from speech_to_speech.testing.scripted import FAST_SCRIPTED
from speech_to_speech.testing.server import RunningServer, running_server


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with running_server(ServerSettings(**FAST_SCRIPTED)) as running:
        yield running


def test_demo_without_a_slash_redirects_to_the_page_and_keeps_the_query(server: RunningServer) -> None:
    response = httpx.get(f"{server.http_url}/demo?autoconnect=1&transport=webrtc", timeout=10)
    assert response.status_code == 307
    assert response.headers["location"] == "demo/?autoconnect=1&transport=webrtc"

    page = httpx.get(f"{server.http_url}/demo", follow_redirects=True, timeout=10)
    assert page.status_code == 200
    assert str(page.url) == f"{server.http_url}/demo/"
    assert page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="demo.js"></script>' in page.text


def test_the_page_loads_only_its_own_assets_which_are_served_as_module_scripts(server: RunningServer) -> None:
    page = httpx.get(f"{server.http_url}/demo/", timeout=10).text
    references = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert references, "the page references no assets"
    assert all("//" not in reference for reference in references), f"a reference leaves the server: {references}"
    for name in ["demo.js", "audio-worklet.js", "demo.css"]:
        response = httpx.get(f"{server.http_url}/demo/{name}", timeout=10)
        assert response.status_code == 200, name
        assert response.headers["cache-control"] == "no-cache"
    assert httpx.get(f"{server.http_url}/demo/demo.js", timeout=10).headers["content-type"].startswith(
        "text/javascript"
    )
    assert httpx.get(f"{server.http_url}/demo/demo.css", timeout=10).headers["content-type"].startswith("text/css")


def test_no_demo_serves_no_page() -> None:
    with running_server(ServerSettings(**FAST_SCRIPTED, demo=False)) as server:
        assert httpx.get(f"{server.http_url}/demo", timeout=10).status_code == 404
        assert httpx.get(f"{server.http_url}/demo/", timeout=10).status_code == 404
        assert httpx.get(f"{server.http_url}/health", timeout=10).status_code == 200


def test_the_demo_is_on_by_default_and_the_no_demo_flag_turns_it_off() -> None:
    parser, fields = build_parser()
    assert settings_from_args(parser.parse_args(["serve"]), fields).server.demo is True
    assert settings_from_args(parser.parse_args(["serve", "--no-demo"]), fields).server.demo is False


def test_an_unbuilt_demo_is_not_mounted_and_the_log_says_how_to_build_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = FastAPI()
    assert mount_demo(app, static_dir=tmp_path) is False
    assert "make demo" in caplog.text
    assert TestClient(app).get("/demo/").status_code == 404


def test_the_page_is_package_data() -> None:
    assert STATIC_DIR.parent.name == "speech_to_speech"
    assert (STATIC_DIR / "index.html").is_file()
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"demo_static/*"' in pyproject
