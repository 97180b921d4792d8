"""A full server says so in a way each client can read, and a new session may wait for a unit.

A browser (its handshake carries Origin) cannot read a refused handshake's HTTP status: it is
let in, told with an ``error`` event, and closed with 1013. Every other client keeps the
HTTP 503 with Retry-After. ``--admission_wait_s`` lets a new session wait for a unit instead.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
import websockets

from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import RunningServer

from .conftest import ServerFactory

RETRY_HINT = "error:error.retry_after_s"  # our extension of the error object
BUSY_MESSAGE = "busy: 1 of 1 sessions in use; try again in 1 s"
# Looks like SDP but cannot be answered: a call that got a unit answers 400, one refused at the gate 503.
UNANSWERABLE_OFFER = ("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"
                      "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=rtpmap:111 opus/48000/2\r\n")


def _page_origin(server: RunningServer) -> str:
    return f"http://{server.host}:{server.port}"


async def _refused_at_handshake(server: RunningServer, **connect: Any) -> websockets.http11.Response:
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with RealtimeTestClient.connect(server.ws_url, **connect):
            pass
    return refused.value.response


async def _post_offer(server: RunningServer, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.http_url, timeout=15) as http:
        return await http.post("/v1/realtime/calls", content=UNANSWERABLE_OFFER,
                               headers={"Content-Type": "application/sdp", **headers})


async def test_a_browser_gets_the_socket_an_error_with_a_retry_hint_and_close_1013(
        make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, admission_wait_s=0)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        async with RealtimeTestClient.connect(server.ws_url, origin=_page_origin(server), subprotocols=["realtime"],
                                              allowed_extra=[RETRY_HINT]) as browser:
            assert browser.websocket.subprotocol == "realtime"  # what it offered, or a browser fails the socket
            error = (await browser.recv())["error"]
            assert error["type"] == "invalid_request_error"
            assert error["code"] == "session_limit_reached"
            assert error["message"] == BUSY_MESSAGE
            assert error["retry_after_s"] == 1
            assert await browser.wait_closed() == 1013
            assert browser.websocket.close_reason == "session_limit_reached: try again in 1 s"
            assert [r.event["type"] for r in browser.received] == ["error"]
        await first.barrier()  # the first session is untouched


async def test_other_clients_keep_the_503_with_retry_after(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, admission_wait_s=0)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        response = await _refused_at_handshake(server)
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "1"
        error = json.loads(response.body)["error"]
        assert (error["code"], error["message"], error["retry_after_s"]) == (
            "session_limit_reached", BUSY_MESSAGE, 1)


async def test_webrtc_keeps_its_503_with_the_same_error(make_server: ServerFactory) -> None:
    pytest.importorskip("aiortc")  # without the webrtc extra a call is 501 before the gate
    server = make_server(num_pipelines=1, admission_wait_s=0)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        # A browser's fetch reads the status: WebRTC answers it the HTTP way even with an Origin.
        response = await _post_offer(server, Origin=_page_origin(server))
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    error = response.json()["error"]
    assert (error["code"], error["message"], error["retry_after_s"]) == ("session_limit_reached", BUSY_MESSAGE, 1)


async def test_a_browser_over_its_address_limit_is_told_too(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=2, max_sessions_per_client=1)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        async with RealtimeTestClient.connect(server.ws_url, origin=_page_origin(server),
                                              allowed_extra=[RETRY_HINT]) as browser:
            error = (await browser.recv())["error"]
            assert (error["code"], error["type"], error["retry_after_s"]) == (
                "too_many_sessions", "rate_limit_error", 60)
            assert await browser.wait_closed() == 1013


async def test_a_new_session_waits_for_the_unit_a_leaving_one_frees(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, admission_wait_s=8)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        second = asyncio.create_task(_connect_and_wait(server))
        await asyncio.sleep(1.0)
        assert not second.done(), "refused or let in while the only unit was taken"
        left_at = time.monotonic()
    connected_at = await second
    assert connected_at - left_at < 3.0, "the waiting session did not get the unit soon after it came free"


async def test_a_webrtc_offer_waits_for_a_unit_too(make_server: ServerFactory) -> None:
    pytest.importorskip("aiortc")
    server = make_server(num_pipelines=1, admission_wait_s=8)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        offer = asyncio.create_task(_post_offer(server))
        await asyncio.sleep(1.0)
        assert not offer.done(), "answered while the only unit was taken"
    response = await offer
    # It got the unit: the offer itself is what fails now (and the unit goes back).
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_sdp"


async def test_waiting_sessions_get_units_in_the_order_they_came(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, admission_wait_s=20)
    admitted: list[int] = []
    leave = [asyncio.Event() for _ in range(4)]

    async def waiter(index: int) -> None:
        async with RealtimeTestClient.connect(server.ws_url, timeout=30) as client:
            await client.wait_for("session.created", timeout=30)
            admitted.append(index)
            await leave[index].wait()

    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        waiters = []
        for index in range(4):
            waiters.append(asyncio.create_task(waiter(index)))
            await asyncio.sleep(0.3)  # they queue in this order
    for index in range(4):  # each leaves as soon as it is in; the next in line gets its unit
        while len(admitted) <= index:
            await asyncio.sleep(0.05)
        leave[admitted[-1]].set()
    await asyncio.gather(*waiters)
    assert admitted == [0, 1, 2, 3]


async def test_without_a_wait_a_busy_server_refuses_at_once(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, admission_wait_s=0)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        started = time.monotonic()
        assert (await _refused_at_handshake(server)).status_code == 503
        assert time.monotonic() - started < 2.0  # the short grace for a reconnect only


async def _connect_and_wait(server: RunningServer) -> float:
    """Open a session (waiting at the gate); when session.created came."""
    async with RealtimeTestClient.connect(server.ws_url, timeout=20) as client:
        await client.wait_for("session.created")
        return time.monotonic()
