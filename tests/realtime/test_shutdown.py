"""SIGTERM, an orchestrator's restart: every session gets an error and close 1012, the process exits 0 in time."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from speech_to_speech.protocol import SERVICE_RESTART
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import free_port

DRAIN_S = 3
# Past the drain: the pool's threads stop and the interpreter exits.
EXIT_MARGIN_S = 5


@pytest.fixture
def served() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "speech_to_speech", "serve", "--port", str(port), "--num_pipelines", "2",
         "--vad", "scripted", "--stt", "scripted", "--llm", "scripted", "--tts", "scripted",
         "--scripted_replies", "A long reply that is still being spoken when the server is told to stop.",
         "--scripted_token_delay_ms", "50", "--shutdown_drain_s", str(DRAIN_S)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


async def test_sigterm_closes_every_session_with_an_error_and_a_restart_close_and_exits_zero(
        served: tuple[subprocess.Popen[bytes], int]) -> None:
    process, port = served
    url = f"ws://127.0.0.1:{port}/v1/realtime"
    async with RealtimeTestClient.connect(url) as talking, RealtimeTestClient.connect(url) as idle:
        await talking.wait_for("session.created")
        await idle.wait_for("session.created")
        await talking.send("response.create")
        await talking.wait_for("response.output_audio_transcript.delta")
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        for client in (talking, idle):
            error = await client.wait_for("error")
            assert error["error"]["code"] == "server_shutting_down"
            assert await client.wait_closed(timeout=15) == SERVICE_RESTART  # reconnect and resume, elsewhere
        done = [r.event for r in talking.received if r.event["type"] == "response.done"]
        assert done and done[-1]["response"]["status"] == "failed"  # the reply under way ended as failed
    code = await asyncio.to_thread(process.wait, 30)
    output = process.stdout.read().decode() if process.stdout else ""
    assert code == 0, output
    assert time.monotonic() - started < DRAIN_S + EXIT_MARGIN_S
    assert "closing 2 session(s) with code 1012" in output
    assert "Traceback" not in output


async def test_sigterm_ends_a_session_whose_socket_dropped(served: tuple[subprocess.Popen[bytes], int]) -> None:
    """A detached session (waiting out its 30 s grace for a resume) is ended by the shutdown, not abandoned."""
    process, port = served
    async with RealtimeTestClient.connect(f"ws://127.0.0.1:{port}/v1/realtime") as gone:
        created = await gone.wait_for("session.created")
        await gone.send("response.create")
        await gone.wait_for("response.output_audio_transcript.delta")
        gone.abort()
    await asyncio.sleep(0.3)
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(process.wait, 30)
    output = process.stdout.read().decode() if process.stdout else ""
    assert code == 0, output
    assert time.monotonic() - started < DRAIN_S + EXIT_MARGIN_S
    session = created["session_id"]
    assert f"session {session} lost its socket" in output
    assert output.index(f"session {session} on unit") > output.index(f"session {session} lost its socket")
    assert "Traceback" not in output
