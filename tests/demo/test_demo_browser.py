"""The demo page in headless Chromium, talking to a real server with scripted backends.

Chromium's fake microphone plays a WAV in a loop: a tone (speech to the scripted VAD) and a
pause that ends the turn. The scripted STT hears the given transcripts, the scripted LLM answers
with the given replies (one of them a call of the page's get_local_time tool), the scripted TTS
speaks tones. The page is opened as a kiosk would (/demo?autoconnect=1&transport=…) and read
back through its DOM and its test hook, window.__demoStats.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

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

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

GREETING = "Hello there"
GREETING_REPLY = "Hi! I am a voice agent on your own machine."
TIME_QUESTION = "What time is it?"
TIME_REPLY = "That is the time on your clock."
STORY_REQUEST = "Tell me a long story"
STORY = "Once upon a time " + "a small robot walked through a quiet forest and listened to the birds. " * 6

STEP_TIMEOUT = 30.0
STATS = "JSON.stringify(window.__demoStats)"
TRANSPORTS = ["websocket", "webrtc"]


def skip_without_webrtc(transport: str) -> None:
    if transport != "webrtc":
        return
    if importlib.util.find_spec("aiortc") is None:
        pytest.skip("WebRTC needs the webrtc extra: pip install -e '.[webrtc]'")


# (transport, transcripts, replies, pause_after_s[, server settings]) -> the page, connected.
OpenDemo = Callable[..., Page]


@pytest.fixture
def open_demo(tmp_path: Path) -> Iterator[OpenDemo]:
    """``open_demo(transport, transcripts, replies, pause_after_s)`` → the page, connected; all stopped afterwards."""
    with ExitStack() as stack:

        def open_page(transport: str, transcripts: list[str], replies: list[str], pause_after_s: float,
                      extra: dict[str, Any] | None = None) -> Page:
            settings = ServerSettings(**{**FAST_SCRIPTED, "scripted_transcripts": transcripts,
                                         "scripted_replies": replies, "scripted_token_delay_ms": 5.0,
                                         **(extra or {})})
            server: RunningServer = stack.enter_context(running_server(settings))
            microphone = write_question_wav(tmp_path / "microphone.wav", pause_after_s)
            page = stack.enter_context(chromium([*WEBRTC_LOOPBACK_FLAGS, *fake_microphone_flags(microphone)]))
            page.open(f"{server.http_url}/demo?autoconnect=1&transport={transport}")
            page.wait_for("window.__demoStats?.connection === 'connected'", STEP_TIMEOUT,
                          f"the page to connect over {transport}", explain=STATS)
            return page

        yield open_page


def stats(page: Page) -> dict[str, object]:
    return dict(json.loads(page.evaluate(STATS)))


def transcript_text(page: Page) -> str:
    return str(page.evaluate("document.getElementById('transcript').innerText"))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_spoken_conversation_with_a_tool_call_shows_both_sides_and_its_latency(
    open_demo: OpenDemo, transport: str, tmp_path: Path
) -> None:
    skip_without_webrtc(transport)
    page = open_demo(transport, [GREETING, TIME_QUESTION],
                     [GREETING_REPLY, "<tool_call>get_local_time {}</tool_call>", TIME_REPLY], 3.3)
    assert page.evaluate("document.body.dataset.connection") == "connected"
    label = "WebRTC" if transport == "webrtc" else "WebSocket"
    assert page.evaluate("document.getElementById('connection-text').textContent") == f"Connected over {label}"

    # First turn: the user's words, then the assistant's, on the page.
    page.wait_for(f"window.__demoStats.assistantTranscripts.includes({json.dumps(GREETING_REPLY)})", STEP_TIMEOUT,
                  "the first answer's transcript", explain=STATS)
    text = transcript_text(page)
    assert GREETING in text and GREETING_REPLY in text
    assert text.index(GREETING) < text.index(GREETING_REPLY)

    # Sound came back: audio deltas over WebSocket, RTP with energy in it over WebRTC.
    if transport == "websocket":
        assert stats(page)["audioBytes"] > 0
    else:
        inbound = page.wait_for(
            "window.__demo.inboundAudio().then(a => a && a.bytesReceived > 0 && a.totalAudioEnergy > 0 && a)",
            STEP_TIMEOUT, "inbound RTP audio with energy", explain="window.__demo.inboundAudio()")
        assert inbound["packetsReceived"] > 0

    # Second turn: the tool runs in the page, shows in the transcript, and its follow-up is spoken.
    page.wait_for(f"window.__demoStats.assistantTranscripts.includes({json.dumps(TIME_REPLY)})", STEP_TIMEOUT,
                  "the answer after the tool call", explain=STATS)
    seen = stats(page)
    assert [tool["name"] for tool in seen["tools"]] == ["get_local_time"]
    assert "time_zone" in json.loads(seen["tools"][0]["result"])
    text = transcript_text(page)
    assert text.index(TIME_QUESTION) < text.index("get_local_time") < text.index(TIME_REPLY)

    # Each answer's latency was measured and shown; the page said it was thinking before it spoke.
    assert len(seen["latenciesMs"]) >= 2
    assert all(latency >= 0 for latency in seen["latenciesMs"])
    assert page.evaluate("document.querySelectorAll('#transcript .latency').length") >= 2
    states = seen["states"]
    first_thinking = states.index("thinking")
    assert states[first_thinking - 1 : first_thinking + 2] == ["user", "thinking", "speaking"]
    assert "tool" in states
    assert seen["errors"] == []

    # Everything the page loaded came from the server it was served from: no CDN, works offline.
    loaded = page.evaluate("performance.getEntriesByType('resource').map(entry => entry.name)")
    origin = page.evaluate("location.origin")
    assert loaded and all(url.startswith(origin + "/") for url in loaded), loaded

    shot = page.screenshot(tmp_path / f"demo-{transport}.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_interrupt_button_stops_the_answer(open_demo: OpenDemo, transport: str) -> None:
    skip_without_webrtc(transport)
    # A long pause after the question: nothing but the button can stop the story.
    page = open_demo(transport, [STORY_REQUEST], [STORY], 30.0)
    page.wait_for("window.__demoStats.state === 'speaking'", STEP_TIMEOUT, "the story to be spoken", explain=STATS)
    page.evaluate("document.getElementById('interrupt').click()")
    page.wait_for("window.__demoStats.cleared > 0 && window.__demoStats.state === 'listening'", STEP_TIMEOUT,
                  "the story's audio to be dropped", explain=STATS)
    seen = stats(page)
    assert seen["interruptRequests"] == 1
    assert seen["userTranscripts"] == [STORY_REQUEST], "a new user turn, not the button, ended the story"
    assert seen["errors"] == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_mouth_moves_with_the_answer_and_rests_when_it_is_stopped(open_demo: OpenDemo, transport: str) -> None:
    skip_without_webrtc(transport)
    page = open_demo(transport, [STORY_REQUEST], [STORY], 30.0, {"enable_visemes": True})
    mouth = "document.getElementById('mouth-viseme').textContent"
    assert page.evaluate(mouth) == "sil"
    page.wait_for("window.__demoStats.state === 'speaking'", STEP_TIMEOUT, "the story to be spoken", explain=STATS)
    page.wait_for(f"{mouth} !== 'sil'", STEP_TIMEOUT, "the mouth to open", explain=STATS)
    assert stats(page)["visemeEvents"] > 0
    page.evaluate("document.getElementById('interrupt').click()")
    page.wait_for(f"window.__demoStats.cleared > 0 && {mouth} === 'sil'", STEP_TIMEOUT,
                  "the mouth to rest once the story's audio is dropped", explain=STATS)
    assert stats(page)["errors"] == []
