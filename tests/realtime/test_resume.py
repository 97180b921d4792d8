"""Sessions outlive their socket: a new socket resumes them and misses nothing, sees nothing twice.

Over a real loopback server with scripted stages. A socket is cut in the
middle of a response, from the client's side (its TCP connection aborted,
no close frame) or from the server's side (a relay in front of the server
resets both ends); a socket opened with ``?autostart=0`` resumes the
session from the last ``server_event_seq`` it received.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from speech_to_speech.protocol import Event
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import RunningServer
from speech_to_speech.testing.tcp_proxy import TcpProxy

from .conftest import ServerFactory

REPLY = ("Here is a reply long enough to be cut in the middle. It goes on for a few clauses, "
         "so that audio keeps coming while the socket is away, and it ends here.")


@pytest.fixture
def slow_reply(make_server: ServerFactory) -> RunningServer:
    """One unit, a reply that takes a second or two to speak."""
    return make_server(num_pipelines=1, scripted_replies=[REPLY], scripted_token_delay_ms=15)


def _session_events(*clients: RealtimeTestClient) -> list[Event]:
    return [r.event for client in clients for r in client.received if "server_event_seq" in r.event]


def _last_seq(client: RealtimeTestClient) -> int:
    return max((r.event["server_event_seq"] for r in client.received if "server_event_seq" in r.event), default=0)


def _audio(events: list[Event]) -> bytes:
    return b"".join(base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta")


def _transcript(events: list[Event]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")


async def _ask(client: RealtimeTestClient, text: str = "tell me something") -> None:
    await client.send("conversation.item.create", item={
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    await client.send("response.create")


@contextlib.asynccontextmanager
async def _resumed(url: str, created: Event, last_seq: int, *, token: str | None = None
                   ) -> AsyncIterator[tuple[RealtimeTestClient, Event]]:
    """A socket that resumed the session of ``created``: the client and its ``session.resumed``."""
    async with RealtimeTestClient.connect(f"{url}?autostart=0") as client:
        await client.send("session.resume", session_id=created["session_id"],
                          resume_token=token or created["resume_token"], last_received_server_event_seq=last_seq)
        resumed = await client.recv()
        assert resumed["type"] == "session.resumed", resumed
        yield client, resumed


async def _refused(url: str, fields: dict[str, Any]) -> tuple[Event, int | None, str]:
    """The error a resume-only socket gets for ``session.resume`` with ``fields``, its close code, the event_id."""
    async with RealtimeTestClient.connect(f"{url}?autostart=0") as client:
        event_id = await client.send("session.resume", **fields)
        error = await client.recv()
        code = await client.wait_closed()
    return error, code, event_id


async def _wait_idle(server: RunningServer, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(slot.state == "idle" for slot in server.pool.status()):
        assert time.monotonic() < deadline, f"units still busy: {server.pool.status()}"
        await asyncio.sleep(0.02)


async def _reference(server: RunningServer) -> list[Event]:
    """The same turn on a fresh session that keeps its socket: what a complete response holds."""
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await _ask(client)
        events = await client.collect_until("response.done")
        await client.send("session.close")
        await client.wait_for("session.closed")
    await _wait_idle(server)
    return events


def _assert_exactly_once_in_order(events: list[Event]) -> None:
    seqs = [e["server_event_seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), f"seqs not 1..n once each: {seqs}"
    ids = [e["event_id"] for e in events]
    assert len(set(ids)) == len(ids), "an event_id was delivered twice"


@pytest.mark.parametrize("side", ["client", "server"])
async def test_a_socket_cut_mid_response_resumes_with_every_event_once_in_order(
        slow_reply: RunningServer, side: str) -> None:
    reference = await _reference(slow_reply)
    async with TcpProxy.running(slow_reply.host, slow_reply.port) as proxy:
        async with RealtimeTestClient.connect(proxy.url()) as first:
            created = await first.wait_for("session.created")
            assert (created["attachment_generation"], created["server_event_seq"]) == (1, 1)
            await _ask(first)
            await first.wait_for("response.output_audio.delta")
            if side == "client":
                first.abort()  # the client's TCP connection drops: no close frame
            else:
                assert proxy.cut() == 1  # the network drops it under the server
            await first.wait_closed()
        assert not [r for r in first.received if r.event["type"] == "response.done"], "cut too late"
        await asyncio.sleep(0.3)  # the reply goes on while no socket is attached
        async with _resumed(slow_reply.ws_url, created, _last_seq(first)) as (second, resumed):
            assert resumed["session_id"] == created["session_id"]
            assert resumed["attachment_generation"] == 2
            assert resumed["resume_token"] != created["resume_token"]
            assert "server_event_seq" not in resumed  # connection-level: not journaled
            assert resumed["session"]["id"] == created["session_id"]
            await second.collect_until("response.done")
            await second.send("session.close")
            await second.wait_for("session.closed")
    events = _session_events(first, second)
    _assert_exactly_once_in_order(events)
    assert [e["type"] for e in events].count("response.done") == 1
    assert events[-2]["response"]["status"] == "completed"
    assert _transcript(events) == _transcript(reference)
    assert _audio(events) == _audio(reference)  # every sample, once
    await _wait_idle(slow_reply)


async def test_resume_after_the_grace_period_fails_as_expired_and_frees_the_unit(
        make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, disconnect_grace_s=0.3)
    async with RealtimeTestClient.connect(server.ws_url) as gone:
        created = await gone.wait_for("session.created")
        gone.abort()
    await _wait_idle(server)  # released when the grace ended, not before the test looked
    error, code, event_id = await _refused(server.ws_url, {
        "session_id": created["session_id"], "resume_token": created["resume_token"],
        "last_received_server_event_seq": 1})
    assert error["type"] == "error" and "server_event_seq" not in error
    assert error["error"]["code"] == "session_resume_expired"
    assert error["error"]["type"] == "invalid_request_error"
    assert error["error"]["event_id"] == event_id
    assert code == 1008


async def test_a_wrong_token_is_refused_and_the_right_one_still_resumes(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1)
    async with RealtimeTestClient.connect(server.ws_url) as gone:
        created = await gone.wait_for("session.created")
        gone.abort()
    error, code, event_id = await _refused(server.ws_url, {
        "session_id": created["session_id"], "resume_token": created["resume_token"] + "x",
        "last_received_server_event_seq": 1})
    assert (error["error"]["code"], error["error"]["event_id"], code) == (
        "session_resume_invalid_token", event_id, 1008)
    async with _resumed(server.ws_url, created, 1) as (client, resumed):
        assert resumed["attachment_generation"] == 2
        await client.send("session.close")
        await client.wait_for("session.closed")
    await _wait_idle(server)


async def test_an_unknown_session_and_a_malformed_resume_are_refused_with_the_clients_event_id(
        server: RunningServer) -> None:
    error, code, event_id = await _refused(server.ws_url, {
        "session_id": "sess_never_was", "resume_token": "rt_x", "last_received_server_event_seq": 0})
    assert (error["error"]["code"], error["error"]["event_id"], code) == ("session_resume_expired", event_id, 1008)
    for fields, param in [({"resume_token": "rt_x"}, "session_id"),
                          ({"session_id": "s", "resume_token": 7}, "resume_token"),
                          ({"session_id": "s", "resume_token": "rt", "last_received_server_event_seq": -1},
                           "last_received_server_event_seq"),
                          ({"session_id": "s", "resume_token": "rt", "last_finished_response_id": 3},
                           "last_finished_response_id")]:
        error, code, event_id = await _refused(server.ws_url, fields)
        assert error["error"]["code"] == "invalid_request_error", error
        assert (error["error"]["param"], error["error"]["event_id"], code) == (param, event_id, 1008)
    async with RealtimeTestClient.connect(f"{server.ws_url}?autostart=0") as client:
        event_id = await client.send("session.update", session={"type": "realtime"})
        error = await client.recv()
        assert (error["error"]["code"], error["error"]["event_id"]) == ("session_resume_required", event_id)
        assert await client.wait_closed() == 1008


async def test_a_third_socket_replaces_the_second_which_is_told_and_closed(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        created = await first.wait_for("session.created")
        first.abort()
    async with _resumed(server.ws_url, created, 1) as (second, resumed):
        await second.barrier()
        async with _resumed(server.ws_url, created, _last_seq(second),
                            token=resumed["resume_token"]) as (third, again):
            assert again["attachment_generation"] == 3
            replaced = await second.wait_for("session.replaced")
            assert replaced["session_id"] == created["session_id"]
            assert replaced["attachment_generation"] == 2
            assert "server_event_seq" not in replaced
            await second.wait_closed()
            await third.barrier()  # the session goes on on the third socket
            updated = third.received[-1].event
            assert updated["type"] == "session.updated"
            assert updated["server_event_seq"] > _last_seq(second)
            error, _, _ = await _refused(server.ws_url, {  # the tokens of earlier sockets no longer open it
                "session_id": created["session_id"], "resume_token": resumed["resume_token"],
                "last_received_server_event_seq": 0})
            assert error["error"]["code"] == "session_resume_invalid_token"
            await third.send("session.close")
            await third.wait_for("session.closed")
    await _wait_idle(server)


async def test_a_journal_gap_is_reported_as_resync_required_before_what_is_still_held(
        make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, scripted_replies=[REPLY], replay_journal_max_bytes=20_000)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        created = await first.wait_for("session.created")
        await _ask(first)
        done = await first.wait_for("response.done")
        first.abort()
    async with _resumed(server.ws_url, created, 1) as (second, _):
        resync = await second.recv()
        assert resync["type"] == "session.resync_required"
        assert (resync["session_id"], resync["reason"]) == (created["session_id"], "journal_gap")
        assert resync["server_event_seq"] == done["server_event_seq"] + 1  # journaled: it has a seq
        await second.barrier()
        held = [r.event["server_event_seq"] for r in second.received[2:-1]]  # after session.resumed and the resync
        assert held, "the journal kept nothing"
        assert held[0] > 2, "the oldest events were to be gone"
        assert held == list(range(held[0], done["server_event_seq"] + 1))  # the newest, each once, in order
        await second.send("session.close")
        await second.wait_for("session.closed")


async def test_event_ack_trims_the_journal(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        created = await first.wait_for("session.created")
        await first.barrier()
        acked = _last_seq(first)
        await first.send("session.event_ack", server_event_seq=acked)
        await first.barrier()  # no reply of its own
        assert not [r for r in first.received if r.event["type"] in ("error", "session.event_ack")]
        first.abort()
    async with _resumed(server.ws_url, created, acked) as (second, resumed):
        replayed = await second.recv()  # everything after the ack is still there: the second barrier's answer
        assert (replayed["type"], replayed["server_event_seq"]) == ("session.updated", acked + 1)
        assert await second.barrier() == []
        token = resumed["resume_token"]
        second.abort()
    async with _resumed(server.ws_url, created, 0, token=token) as (third, _):
        resync = await third.recv()  # what was acked is gone: asking for it again is a gap
        assert resync["type"] == "session.resync_required"
        await third.send("session.close")
        await third.wait_for("session.closed")


async def test_heartbeat_is_answered_on_the_socket_without_a_seq(connect: Any) -> None:
    async with connect() as client:
        created = client.received[0].event
        event_id = await client.send("session.heartbeat")
        ack = await client.recv()
        assert ack["type"] == "session.heartbeat_ack"
        assert ack["session_id"] == created["session_id"]
        assert "server_event_seq" not in ack
        bad = await client.send("session.event_ack", server_event_seq="seven")
        error = await client.wait_for("error")
        assert (error["error"]["event_id"], error["error"]["param"]) == (bad, "server_event_seq")
        stray = await client.send("session.resume", session_id=created["session_id"],
                                  resume_token=created["resume_token"])
        error = await client.wait_for("error")
        assert error["error"]["event_id"] == stray  # only a resume-only socket's first event
        assert event_id != stray


async def test_session_close_says_closed_and_ends_the_session_at_once(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, scripted_replies=[REPLY], scripted_token_delay_ms=15)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        created = await client.wait_for("session.created")
        await _ask(client)
        await client.wait_for("response.output_audio.delta")
        await client.send("session.close")
        closed = await client.wait_for("session.closed")
        assert (closed["session_id"], closed["reason"]) == (created["session_id"], "client_close")
        assert closed["server_event_seq"] == _last_seq(client)
        assert await client.wait_closed() == 1000
    await _wait_idle(server, timeout=5)
    error, _, _ = await _refused(server.ws_url, {
        "session_id": created["session_id"], "resume_token": created["resume_token"],
        "last_received_server_event_seq": 0})
    assert error["error"]["code"] == "session_resume_expired"


async def test_a_detached_session_outlives_the_idle_timeout_until_its_grace_ends(
        make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, idle_timeout_s=0.3, disconnect_grace_s=4.0)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        created = await first.wait_for("session.created")
        first.abort()
    await asyncio.sleep(0.9)  # three idle timeouts
    async with _resumed(server.ws_url, created, 1) as (second, _):
        assert await second.barrier() == []
        await second.send("session.close")
        await second.wait_for("session.closed")


async def test_a_new_client_evicts_the_oldest_detached_session_when_no_unit_is_free(
        make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, disconnect_grace_s=30.0)
    async with RealtimeTestClient.connect(server.ws_url) as gone:
        created = await gone.wait_for("session.created")
        gone.abort()
    await asyncio.sleep(0.2)
    assert [slot.state for slot in server.pool.status()] == ["busy"]  # held for its grace
    async with RealtimeTestClient.connect(server.ws_url) as newcomer:
        assert (await newcomer.recv())["type"] == "session.created"
        error, _, _ = await _refused(server.ws_url, {
            "session_id": created["session_id"], "resume_token": created["resume_token"],
            "last_received_server_event_seq": 1})
        assert error["error"]["code"] == "session_resume_expired"


async def test_a_normal_close_ends_the_session_at_once(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, disconnect_grace_s=30.0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        created = await client.wait_for("session.created")
    await _wait_idle(server, timeout=5)
    error, _, _ = await _refused(server.ws_url, {
        "session_id": created["session_id"], "resume_token": created["resume_token"],
        "last_received_server_event_seq": 1})
    assert error["error"]["code"] == "session_resume_expired"


async def test_session_created_tells_the_session_id_generation_token_and_capabilities(connect: Any) -> None:
    async with connect() as client:
        created = client.received[0].event
        assert created["session_id"] == created["session"]["id"]
        assert created["resume_token"].startswith("rt_")
        capabilities = created["session"]["capabilities"]
        assert capabilities["implementation_level"] == "cascaded"
        assert capabilities["supports_session_resume"] is True
        assert capabilities["chunk_period_ms"] == 32
        assert "session.heartbeat" not in capabilities
        updated = await client.update_session({})
        assert updated["server_event_seq"] > created["server_event_seq"]


async def test_a_replay_repeats_every_event_exactly_as_it_was_first_sent(make_server: ServerFactory) -> None:
    """Events are fixed when emitted: the user item's ``conversation.item.added`` still has no transcript
    when it is replayed, although the item got one a moment after it was emitted."""
    server = make_server(num_pipelines=1, scripted_transcripts=["words heard"], scripted_stt_delay_ms=100)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        created = await first.wait_for("session.created")
        await first.append_audio(spoken_turn(24000), 24000)
        await first.wait_for("response.done")
        first.abort()
    async with _resumed(server.ws_url, created, 0) as (second, _):
        await second.barrier()
    original = {e["server_event_seq"]: e for e in _session_events(first)}
    replayed = [r.event for r in second.received[1:-1]]
    assert [e["server_event_seq"] for e in replayed] == sorted(original)
    assert all(event == original[event["server_event_seq"]] for event in replayed)
    added = next(e for e in replayed if e["type"] == "conversation.item.added" and e["item"]["role"] == "user")
    assert added["item"]["content"][0]["transcript"] is None
    done = next(e for e in replayed if e["type"] == "conversation.item.done" and e["item"]["role"] == "user")
    assert done["item"]["content"][0]["transcript"] == "words heard"


async def test_a_resume_only_socket_that_says_nothing_is_closed(server: RunningServer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from speech_to_speech.realtime.sessions import runner as session_runner

    monkeypatch.setattr(session_runner, "RESUME_HANDSHAKE_TIMEOUT_S", 0.3)
    async with RealtimeTestClient.connect(f"{server.ws_url}?autostart=0") as client:
        error = await client.recv()
        assert (error["error"]["code"], error["error"]["event_id"]) == ("session_resume_required", None)
        assert await client.wait_closed() == 1008
    assert all(slot.state == "idle" for slot in server.pool.status())  # it never claimed a unit


async def test_the_capabilities_endpoint_says_what_session_created_will(connect: Any, server: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=server.http_url, timeout=10) as http:
        sessions = (await http.get("/v1/realtime/capabilities")).json()["sessions"]
    assert sessions["webrtc"]["supports_session_resume"] is False
    async with connect() as client:
        assert client.received[0].event["session"]["capabilities"] == sessions["websocket"]


async def test_a_token_opens_only_its_own_session_and_two_dropped_sessions_resume_apart(
        make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=2)
    created = []
    for text in ("first", "second"):
        async with RealtimeTestClient.connect(server.ws_url) as client:
            created.append(await client.wait_for("session.created"))
            await client.send("conversation.item.create", item={
                "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
            await client.wait_for("conversation.item.done")
            client.abort()
    a, b = created
    assert a["session_id"] != b["session_id"]
    error, _, _ = await _refused(server.ws_url, {"session_id": a["session_id"], "resume_token": b["resume_token"],
                                                 "last_received_server_event_seq": 0})
    assert error["error"]["code"] == "session_resume_invalid_token"
    for mine, text in ((b, "second"), (a, "first")):
        async with _resumed(server.ws_url, mine, 0) as (client, resumed):
            assert resumed["session_id"] == mine["session_id"]
            await client.barrier()
            said = [e["item"]["content"][0]["text"] for e in (r.event for r in client.received)
                    if e["type"] == "conversation.item.done"]
            assert said == [text]  # its own conversation, replayed from the start
            await client.send("session.close")
            await client.wait_for("session.closed")
