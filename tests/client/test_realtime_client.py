"""RealtimeClient against the real server over loopback: answers, a cut socket resumed, timings, typed errors."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np
import pytest

from speech_to_speech.client import (
    ConnectionLost,
    ConnectionResumed,
    EventCollector,
    InlineRealtimeClient,
    ProtocolError,
    RealtimeClient,
    RealtimeEvent,
    ReconnectPolicy,
    ResponseHandle,
    ResumeFailed,
    SessionClosed,
    SessionLimitReached,
    WaitTimeout,
)
from speech_to_speech.client.link import Link, websocket_connector
from speech_to_speech.config import ServerSettings
from speech_to_speech.realtime.app.server import build_app
from speech_to_speech.testing.client_audio import silence, tone
from speech_to_speech.testing.server import RunningServer

from .client_harness import MS_PER_CHAR, SCRIPTED
from .conftest import ServerFactory
from .cutting_relay import CuttingRelay

RATE = 24000
REPLY = "One, two, three, four, five, six, seven, eight, nine, ten."
# Words arrive 20 ms apart, so a reply is still being written when the socket is cut.
SLOW = {"scripted_replies": [REPLY], "scripted_token_delay_ms": 20}
TIMEOUT = 30.0
FAST_RETRY = ReconnectPolicy(attempts=5, initial_delay_s=0.05, max_delay_s=0.4)


def question() -> bytes:
    """A spoken turn to the scripted VAD: a tone, then enough silence to end it."""
    samples = np.concatenate([silence(0.2, RATE), tone(0.6, RATE), silence(0.6, RATE)])
    return (samples * 32767).astype("<i2").tobytes()


async def ask(client: RealtimeClient) -> ResponseHandle:
    """Speak the question (as fast as the socket takes it) and return the finished answer."""
    responses = client.responses()
    await client.stream_pcm(question(), realtime=False)
    response = await asyncio.wait_for(anext(responses), TIMEOUT)
    await response.wait(TIMEOUT)
    return response


@contextlib.contextmanager
def relayed(server: RunningServer) -> Iterator[CuttingRelay]:
    with CuttingRelay(f"ws://{server.host}:{server.port}").running() as relay:
        yield relay


@contextlib.asynccontextmanager
async def collected(client: RealtimeClient) -> AsyncIterator[EventCollector]:
    """Collect every event of ``client`` from its session.created; complete once the block (and session) ends."""
    collector = EventCollector()
    consuming = asyncio.ensure_future(collector.consume(client))
    async with client:
        yield collector
    await asyncio.wait_for(consuming, TIMEOUT)


def seqs(events: list[RealtimeEvent]) -> list[int]:
    return [e.server_event_seq for e in events if e.server_event_seq is not None]


# ---------------------------------------------------------------- answers


async def test_a_spoken_question_is_answered_through_responses(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["Paris is the capital of France."])
    async with RealtimeClient(server.ws_url, session={"type": "realtime", "instructions": "Be brief."}) as client:
        assert client.session_id is not None and client.session_id.startswith("sess_")
        assert client.resume_token and client.capabilities["supports_session_resume"] is True
        assert client.session_info["instructions"] == "Be brief."
        response = await ask(client)
        chunks = [chunk async for chunk in response.audio()]
    assert response.transcript == "Paris is the capital of France."
    assert response.status == "completed" and response.done_event is not None
    assert response.response_id == response.created_event.response_id == response.done_event.response_id
    assert sum(map(len, chunks)) == len(response.audio_bytes) > 0
    assert response.audio_ms == pytest.approx(len(response.transcript) * MS_PER_CHAR, abs=30)
    assert response.played_ms == pytest.approx(response.audio_ms)


async def test_the_in_process_client_answers_the_same_question_without_a_socket(make_server: ServerFactory) -> None:
    settings = {"scripted_replies": ["Paris is the capital of France."]}
    async with RealtimeClient(make_server(**settings).ws_url) as client:
        over_socket = await ask(client)
    app, pool = build_app(ServerSettings(**{**SCRIPTED, **settings}))
    try:
        async with InlineRealtimeClient(app) as inline:
            assert inline.session_id is not None and inline.reconnect is None
            in_process = await ask(inline)
    finally:
        pool.close()
    assert in_process.transcript == over_socket.transcript == "Paris is the capital of France."
    assert in_process.audio_bytes == over_socket.audio_bytes
    assert in_process.status == "completed"


async def test_the_in_process_client_reports_a_busy_server_as_the_session_limit() -> None:
    app, pool = build_app(ServerSettings(**{**SCRIPTED, "num_pipelines": 1}))
    try:
        async with InlineRealtimeClient(app):
            with pytest.raises(SessionLimitReached, match="HTTP 503"):
                async with InlineRealtimeClient(app):
                    pass
    finally:
        pool.close()


# ---------------------------------------------------------------- a cut socket is resumed


class CapturingConnector:
    """The default WebSocket connector, keeping each link so the test can drop it from the client's side."""

    def __init__(self) -> None:
        self.links: list[Link] = []
        self._open = websocket_connector()

    async def __call__(self, url: str) -> Link:
        link = await self._open(url)
        self.links.append(link)
        return link


@pytest.mark.parametrize("side", ["network", "client"])
async def test_a_socket_cut_mid_response_is_resumed_with_every_event_once_and_in_order(
        make_server: ServerFactory, side: str) -> None:
    server = make_server(**SLOW)
    connector = CapturingConnector()
    with relayed(server) as relay:
        client = RealtimeClient(relay.ws_url, reconnect=FAST_RETRY, connect=connector)
        async with collected(client) as collector:
            reference = await ask(client)  # the same reply, uncut
            first_token = client.resume_token
            if side == "network":  # the server's next events are lost on the way, then both ends see a drop
                relay.cut_after("response.output_audio.delta", lose_s=0.3)
            else:
                async def drop_at_first_audio() -> None:
                    async for event in client.events():
                        if event.type == "response.output_audio.delta":
                            connector.links[-1].abort()
                            return
                dropper = asyncio.create_task(drop_at_first_audio())
            response = await ask(client)
            if side == "client":
                await dropper
    events = collector.events
    assert [type(e) for e in events].count(ConnectionResumed) == 1
    assert seqs(events) == list(range(1, len(seqs(events)) + 1))  # from session.created on: no gap, no repeat
    ids = [e.event_id for e in events if e.server_event_seq is not None]
    assert len(ids) == len(set(ids))
    assert relay.paths == ["/v1/realtime", "/v1/realtime?autostart=0"]
    if side == "network":
        assert relay.lost, "the cut lost nothing: it came too late to test the replay"
        assert {e["event_id"] for e in relay.lost} <= set(ids)  # what the cut lost was replayed
    assert response.audio_bytes == reference.audio_bytes  # audio complete
    assert response.transcript == reference.transcript == REPLY
    assert collector.audio_bytes(response.response_id) == response.audio_bytes
    assert client.resumes == 1 and client.attachment_generation == 2
    assert client.resume_token not in (None, first_token)  # rotated
    resume = next(e for e in relay.from_client if e["type"] == "session.resume")
    assert resume["session_id"] == client.session_id
    assert 0 < resume["last_received_server_event_seq"] < max(seqs(events))


async def test_timing_summary_agrees_with_the_events_and_shows_a_cut_as_a_gap(make_server: ServerFactory) -> None:
    server = make_server(**SLOW)
    with relayed(server) as relay:
        client = RealtimeClient(relay.ws_url, reconnect=FAST_RETRY)
        async with collected(client) as collector:
            await ask(client)  # warm: the second answer is the one measured
            asked_at = time.monotonic()
            relay.cut_after("response.output_audio.delta", lose_s=0.3)
            response = await ask(client)
    summary = collector.timing_summary(after_s=asked_at)
    deltas = [e for e in collector.events if e.type == "response.output_audio.delta" and e.received_at >= asked_at]
    texts = [e for e in collector.events
             if e.type == "response.output_audio_transcript.delta" and e.received_at >= asked_at]
    gaps = [(b.received_at - a.received_at) * 1000 for a, b in itertools.pairwise(deltas)]
    assert summary.audio_deltas == len(deltas) >= 2
    assert summary.audio_bytes == len(response.audio_bytes)
    assert summary.first_audio_ms == pytest.approx((deltas[0].received_at - asked_at) * 1000)
    assert summary.first_text_ms == pytest.approx((texts[0].received_at - asked_at) * 1000)
    assert summary.first_audio_ms is not None and summary.first_audio_ms > 0
    assert summary.audio_gap_mean_ms == pytest.approx(sum(gaps) / len(gaps))
    assert summary.audio_gap_max_ms == pytest.approx(max(gaps))
    assert summary.audio_gap_max_ms is not None and summary.audio_gap_max_ms >= 300  # the lost 0.3 s
    assert collector.first_received_at("response.output_audio.delta", after_s=asked_at) == deltas[0].received_at
    assert collector.count("session.resumed") == 1 and collector.errors() == []


async def test_ack_playback_reports_what_audio_handed_out(make_server: ServerFactory) -> None:
    async with RealtimeClient(make_server().ws_url) as client:
        response = await ask(client)
        async for _ in response.audio():
            pass
        await client.ack_playback(response.played_ms, response_id=response.response_id)
        acknowledged = await client.wait_for("playback.acknowledged", timeout_s=5)
    assert acknowledged.response_id == response.response_id
    assert response.played_ms == pytest.approx(response.audio_ms) and response.played_ms > 0


# ---------------------------------------------------------------- keeping the session


async def test_event_acks_and_heartbeats_go_out_on_their_timers(make_server: ServerFactory) -> None:
    server = make_server(**SLOW)
    with relayed(server) as relay:
        async with RealtimeClient(relay.ws_url, event_ack_interval_s=0.05, heartbeat_interval_s=0.05) as client:
            await ask(client)
            ack = await client.wait_for("session.heartbeat_ack", timeout_s=5)
            await asyncio.sleep(0.2)  # one more ack period
            last = client.last_server_event_seq
    assert ack.session_id == client.session_id
    acks = [e["server_event_seq"] for e in relay.from_client if e["type"] == "session.event_ack"]
    assert acks == sorted(set(acks)) and acks[-1] == last  # rising, never repeated, up to what we hold
    assert relay.from_client[-1]["type"] == "session.close"


async def test_a_connection_that_goes_silent_is_dropped_at_the_next_heartbeat_and_resumed(
        make_server: ServerFactory) -> None:
    server = make_server(**SLOW)
    with relayed(server) as relay:
        client = RealtimeClient(relay.ws_url, heartbeat_interval_s=0.2, reconnect=FAST_RETRY)
        async with collected(client) as collector:
            await client.wait_for("session.heartbeat_ack", timeout_s=5)  # the lease works while the network does
            relay.freeze()  # nothing passes any more, and nobody is told
            resumed = await client.wait_for("session.resumed", timeout_s=5)
            response = await ask(client)
    assert isinstance(resumed, ConnectionResumed) and client.resumes == 1
    assert response.transcript == REPLY
    assert relay.paths == ["/v1/realtime", "/v1/realtime?autostart=0"]
    assert seqs(collector.events) == list(range(1, len(seqs(collector.events)) + 1))


async def test_leaving_the_block_closes_the_session_and_later_calls_say_so(make_server: ServerFactory) -> None:
    server = make_server()
    client = RealtimeClient(server.ws_url)
    async with collected(client) as collector:
        pass
    closed = collector.events[-1]
    assert (closed.type, closed.raw["reason"], closed.session_id) == ("session.closed", "client_close",
                                                                      client.session_id)
    with pytest.raises(SessionClosed):
        await client.send({"type": "response.create"})
    with pytest.raises(SessionClosed):
        await client.wait_for("response.done", timeout_s=1)


# ---------------------------------------------------------------- typed errors


async def test_a_rejected_call_raises_a_protocol_error_with_its_code_and_event_id(
        make_server: ServerFactory) -> None:
    server = make_server()
    with pytest.raises(ProtocolError) as rejected:
        async with RealtimeClient(server.ws_url, session={"type": "realtime", "audio": {"input": {"format": {
                "type": "audio/pcm", "rate": 1}}}}):
            pass
    assert rejected.value.event_id is not None and "rate" in str(rejected.value)
    async with RealtimeClient(server.ws_url) as client:
        asked = await client.send({"type": "conversation.item.retrieve", "item_id": "item_missing"})
        with pytest.raises(ProtocolError) as missing:
            await client.wait_for("conversation.item.retrieved", timeout_s=5)
        with pytest.raises(WaitTimeout):
            await client.wait_for("response.done", timeout_s=0.2)
    assert (missing.value.code, missing.value.event_id) == ("conversation_item_not_found", asked)


async def test_without_reconnect_a_cut_is_connection_lost(make_server: ServerFactory) -> None:
    server = make_server(**SLOW)
    with relayed(server) as relay:
        async with RealtimeClient(relay.ws_url, reconnect=None) as client:
            events = client.events()
            relay.cut_now()
            with pytest.raises(ConnectionLost, match="1006"):
                async for _ in events:
                    pass
            with pytest.raises(ConnectionLost):
                await client.wait_for("response.done", timeout_s=5)
    assert relay.connections == 1


async def test_a_resume_after_the_grace_period_fails_with_session_resume_expired(
        make_server: ServerFactory) -> None:
    server = make_server(disconnect_grace_s=0.05)
    with relayed(server) as relay:
        slow_retry = ReconnectPolicy(attempts=2, initial_delay_s=0.6, max_delay_s=0.6, jitter=False)
        async with RealtimeClient(relay.ws_url, reconnect=slow_retry) as client:
            waiting = asyncio.ensure_future(client.wait_for("response.done", timeout_s=TIMEOUT))
            await asyncio.sleep(0)
            relay.cut_now()
            with pytest.raises(ResumeFailed) as failed:
                await waiting
    assert failed.value.code == "session_resume_expired"
    assert relay.connections == 2  # refused at once: no second attempt


# ---------------------------------------------------------------- duplicates


async def test_replayed_events_the_client_already_has_are_dropped() -> None:
    """A server that replays more than asked (the real one never does) still yields each event once."""
    from json import dumps, loads

    from websockets.asyncio.server import ServerConnection, serve

    def event(seq: int, kind: str, **fields: Any) -> str:
        return dumps({"type": kind, "event_id": f"e{seq}", "server_event_seq": seq, **fields})

    journal = [event(2, "response.created", response={"id": "r1"}),
               event(3, "response.output_audio.delta", response_id="r1", delta="AAAA"),
               event(4, "response.output_audio.delta", response_id="r1", delta="AQEB"),
               event(5, "response.done", response={"id": "r1", "status": "completed"})]
    created = event(1, "session.created", session_id="s1", resume_token="rt_1",
                    session={"id": "s1", "capabilities": {"supports_session_resume": True}})

    async def serve_one(connection: ServerConnection) -> None:
        if connection.request is not None and "autostart=0" in connection.request.path:
            request = loads(await connection.recv())
            assert request["last_received_server_event_seq"] == 3
            await connection.send(dumps({"type": "session.resumed", "session_id": "s1", "resume_token": "rt_2",
                                         "attachment_generation": 2}))
            for line in journal:  # all of it, from the start
                await connection.send(line)
            await connection.wait_closed()
            return
        await connection.send(created)
        for line in journal[:2]:
            await connection.send(line)
        await asyncio.sleep(0.1)
        if connection.transport is not None:
            connection.transport.abort()

    async with serve(serve_one, "127.0.0.1", 0) as fake:
        port = next(iter(fake.sockets)).getsockname()[1]
        client = RealtimeClient(f"ws://127.0.0.1:{port}/v1/realtime", reconnect=FAST_RETRY, close_timeout_s=0.2)
        async with collected(client) as collector:
            response = await ask_silently(client)
    assert seqs(collector.events) == [1, 2, 3, 4, 5]
    assert [e.type for e in collector.events].count("session.resumed") == 1
    assert client.duplicates_dropped == 2 and client.resume_token == "rt_2"
    assert response.audio_bytes == b"\x00\x00\x00\x01\x01\x01"


async def ask_silently(client: RealtimeClient) -> ResponseHandle:
    response = await asyncio.wait_for(anext(client.responses()), TIMEOUT)
    await response.wait(TIMEOUT)
    return response
