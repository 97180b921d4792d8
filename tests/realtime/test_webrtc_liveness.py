"""A WebRTC peer that vanishes without hanging up frees its unit within 10 s; a quiet live one keeps its call.

The bound is functional, not a performance figure: it is the watch's silence
limit (``webrtc_liveness``) plus its tick plus the teardown a ``DELETE`` does.
Without the watch, aioice notices the death only when consent expires, 30 to
45 s later.
"""

from __future__ import annotations

import asyncio
import time
from types import ModuleType

import httpx
import pytest

from speech_to_speech.realtime.webrtc.liveness import SILENCE_LIMIT_S
from speech_to_speech.testing.client_audio import spoken_turn

from .conftest import ServerFactory, pool_states, wait_idle

pytestmark = pytest.mark.timeout(90)

RATE = 48000
FREED_WITHIN_S = 10.0


async def test_a_peer_that_dies_without_hanging_up_frees_its_unit_within_10_s(
        rtc: ModuleType, make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1)
    async with rtc.webrtc_call(server.http_url) as call:
        call.microphone.say(spoken_turn(RATE))
        turn = await call.events.collect_until("response.done", timeout=20)
        assert turn[-1]["response"]["status"] == "completed"
        await call.events.collect_until("output_audio_buffer.stopped", timeout=20)
        assert await pool_states(server) == ["busy"]

        call.vanish()  # no DELETE, no data-channel close, no DTLS close: the process is gone
        freed_after = await wait_idle(server, timeout=FREED_WITHIN_S)
        print(f"unit free {freed_after:.2f} s after the peer died")
        # The server found out by itself: the peer sent audio until it died, so silence had to be waited out.
        assert freed_after > SILENCE_LIMIT_S - 1.0
        async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
            assert (await http.delete(call.location)).status_code == 404  # the call ended, not only the unit


async def test_a_live_peer_that_sends_nothing_keeps_its_call(rtc: ModuleType, make_server: ServerFactory) -> None:
    # The events channel alone, and not a message on it: only ICE consent says this peer is there.
    server = make_server(num_pipelines=1)
    async with rtc.webrtc_call(server.http_url, audio=False) as call:
        await call.events.wait_for("session.created")
        deadline = time.monotonic() + FREED_WITHIN_S + 2.0
        while time.monotonic() < deadline:
            assert await pool_states(server) == ["busy"], "a live, quiet peer lost its call"
            await asyncio.sleep(0.5)
        await call.events.update_session({"instructions": "Still here."})  # and the session still answers
        hung_up = await call.hang_up()
        assert hung_up.status_code == 204
    await wait_idle(server)
