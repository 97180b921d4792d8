"""The demo page when the server is full or asks for a key, in headless Chromium.

With the only pipeline unit held by another client, the page shows "busy: 1 of 1 sessions in
use, retrying in …", counts down, tries again by itself, and connects once the unit is free,
over either transport. A server started with --api_key: the page says the key is missing or
wrong, and connects with the right key typed into its field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect
from websockets.sync.connection import Connection

from speech_to_speech.config import ServerSettings
from speech_to_speech.testing.chromium import (
    WEBRTC_LOOPBACK_FLAGS,
    Page,
    chromium,
    fake_microphone_flags,
    write_question_wav,
)
from speech_to_speech.testing.scripted import FAST_SCRIPTED
from speech_to_speech.testing.server import RunningServer, running_server

from .test_demo_browser import STATS, STEP_TIMEOUT, TRANSPORTS, skip_without_webrtc

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

KEY = "sk-demo-test-4242"
BUSY_LINE = "document.getElementById('busy')"


@contextmanager
def demo_page(tmp_path: Path, **settings: Any) -> Iterator[tuple[RunningServer, Page]]:
    """A scripted server with ``settings`` and a Chromium whose fake microphone stays quiet after one tone."""
    server_settings = ServerSettings(**{**FAST_SCRIPTED, **settings})
    microphone = write_question_wav(tmp_path / "microphone.wav", 30.0)
    with running_server(server_settings) as server, \
            chromium([*WEBRTC_LOOPBACK_FLAGS, *fake_microphone_flags(microphone)]) as page:
        yield server, page


@contextmanager
def holding_the_only_unit(server: RunningServer) -> Iterator[Connection]:
    """Another client's session (no Origin: not a browser), until the block ends or it is closed."""
    with connect(server.ws_url, open_timeout=10) as other:
        assert json.loads(other.recv(timeout=10))["type"] == "session.created"
        yield other


def click_connect(page: Page) -> None:
    page.evaluate("document.getElementById('connect').click()")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_full_server_shows_busy_and_the_page_connects_once_a_unit_is_free(tmp_path: Path, transport: str) -> None:
    skip_without_webrtc(transport)
    with demo_page(tmp_path, num_pipelines=1, admission_wait_s=0) as (server, page), \
            holding_the_only_unit(server) as other:
        page.open(f"{server.http_url}/demo?autoconnect=1&transport={transport}")
        page.wait_for("window.__demoStats?.busy?.includes('retrying in')", STEP_TIMEOUT,
                      "the busy line with its countdown", explain=STATS)
        line = page.evaluate(f"{BUSY_LINE}.textContent")
        assert re.fullmatch(r"busy: 1 of 1 sessions in use, retrying in \d+ s…", line), line
        assert page.evaluate(f"{BUSY_LINE}.hidden") is False
        assert page.evaluate("window.__demoStats.connection") == "waiting"
        page.screenshot(tmp_path / f"busy-{transport}.png")
        # It tries again by itself, and is refused again while the unit is taken.
        page.wait_for("window.__demoStats.refusals >= 2", STEP_TIMEOUT, "a second attempt", explain=STATS)
        assert page.evaluate("window.__demoStats.connection") != "connected"
        other.close()
        page.wait_for("window.__demoStats.connection === 'connected'", STEP_TIMEOUT,
                      "the page to connect once the unit is free", explain=STATS)
        assert page.evaluate(f"{BUSY_LINE}.hidden") is True
        seen = json.loads(page.evaluate(STATS))
        assert seen["busy"] is None
        assert seen["errors"] == [], "being busy is not shown as a problem"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_page_sends_the_api_key_typed_into_it(tmp_path: Path, transport: str) -> None:
    skip_without_webrtc(transport)
    with demo_page(tmp_path, api_key=KEY) as (server, page):
        page.open(f"{server.http_url}/demo?transport={transport}")
        page.wait_for("document.readyState === 'complete' && window.__demoStats", STEP_TIMEOUT, "the page")

        def refused_with(words: str) -> None:
            click_connect(page)
            page.wait_for(f"window.__demoStats.errors.some(e => e.includes({json.dumps(words)}))", STEP_TIMEOUT,
                          f"the page to say {words!r}", explain=STATS)
            assert page.evaluate("window.__demoStats.connection") == "disconnected"

        refused_with("the server needs an API key")
        page.evaluate(f"document.getElementById('api-key').value = {json.dumps(KEY + '-wrong')}")
        refused_with("the server did not accept this API key")
        page.evaluate(f"document.getElementById('api-key').value = {json.dumps(KEY)}")
        click_connect(page)
        page.wait_for("window.__demoStats.connection === 'connected'", STEP_TIMEOUT,
                      f"the page to connect over {transport} with the key", explain=STATS)


def test_a_browser_killed_mid_call_gives_its_unit_to_the_next_page(tmp_path: Path) -> None:
    """The demo over WebRTC answers, its browser is killed (no hang-up), and the demo over WebSocket
    right after says it is busy while the vanished call holds the only unit, then connects by itself."""
    skip_without_webrtc("webrtc")
    settings = ServerSettings(**{**FAST_SCRIPTED, "num_pipelines": 1, "admission_wait_s": 0,
                                 "scripted_replies": ["Hello there."]})
    microphone = write_question_wav(tmp_path / "microphone.wav", 30.0)
    browser = [*WEBRTC_LOOPBACK_FLAGS, *fake_microphone_flags(microphone)]
    with running_server(settings) as server:
        with chromium(browser) as first:
            first.open(f"{server.http_url}/demo?autoconnect=1&transport=webrtc")
            first.wait_for("window.__demoStats?.assistantTranscripts?.includes('Hello there.')", STEP_TIMEOUT,
                           "an answer over WebRTC", explain=STATS)
            first.kill()
        with chromium(browser) as second:
            second.open(f"{server.http_url}/demo?autoconnect=1&transport=websocket")
            # Busy while the vanished call holds the unit (up to ~7 s of silence), unless it has ended already.
            second.wait_for("window.__demoStats?.busy?.includes('retrying in') || "
                            "window.__demoStats?.connection === 'connected'", STEP_TIMEOUT,
                            "the busy line or a connection", explain=STATS)
            if second.evaluate("window.__demoStats.connection") != "connected":
                line = second.evaluate(f"{BUSY_LINE}.textContent")
                assert re.fullmatch(r"busy: 1 of 1 sessions in use, retrying in \d+ s…", line), line
                second.screenshot(tmp_path / "busy-after-a-killed-browser.png")
            second.wait_for("window.__demoStats.connection === 'connected'", STEP_TIMEOUT,
                            "the page to connect once the vanished call is ended", explain=STATS)
            assert json.loads(second.evaluate(STATS))["errors"] == []
