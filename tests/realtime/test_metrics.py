"""GET /metrics: Prometheus text with stage timings, sessions, pool usage and error counts."""

from __future__ import annotations

import asyncio

import httpx
from prometheus_client.parser import text_string_to_metric_families

from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import RunningServer

from .conftest import ClientFactory, ServerFactory

RATE = 24000


def scrape(server: RunningServer) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = httpx.get(f"{server.http_url}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


async def test_a_turn_is_counted_in_stage_histograms(server: RunningServer, connect: ClientFactory) -> None:
    async with connect() as client:
        during = scrape(server)
        await client.append_audio(spoken_turn(RATE), RATE)
        done = (await client.response_cycle())[-1]
    assert done["response"]["status"] == "completed"
    after = scrape(server)
    assert during[("s2s_active_sessions", ())] == 1
    assert during[("s2s_pool_units", (("state", "busy"),))] == 1
    assert after[("s2s_responses_total", (("status", "completed"),))] >= 1
    for stage in ("stt", "llm_first_token", "tts_first_audio", "send"):
        assert after[("s2s_stage_seconds_count", (("stage", stage),))] >= 1
    assert after[("s2s_first_audio_seconds_count", ())] >= 1


async def test_error_events_are_counted_by_code(server: RunningServer, connect: ClientFactory) -> None:
    key = ("s2s_errors_total", (("code", "conversation_item_not_found"),))
    before = scrape(server).get(key, 0.0)
    async with connect() as client:
        await client.send("conversation.item.retrieve", item_id="missing")
        await client.wait_for("error")
    assert scrape(server)[key] == before + 1


def test_pool_states_are_all_reported(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=3)
    values = scrape(server)
    assert values[("s2s_pool_units", (("state", "idle"),))] == 3
    for state in ("busy", "draining", "quarantined"):
        assert values[("s2s_pool_units", (("state", state),))] == 0
    assert values[("s2s_active_sessions", ())] == 0


async def test_detached_resumed_and_expired_sessions_are_counted(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, disconnect_grace_s=0.5)

    def lifecycle(values: dict[tuple[str, tuple[tuple[str, str], ...]], float], event: str) -> float:
        return values[("s2s_session_lifecycle_total", (("event", event),))]

    async with RealtimeTestClient.connect(server.ws_url) as first:
        created = await first.wait_for("session.created")
        first.abort()
    await asyncio.sleep(0.1)
    detached = scrape(server)
    assert (lifecycle(detached, "detached"), detached[("s2s_detached_sessions", ())]) == (1, 1)
    async with RealtimeTestClient.connect(f"{server.ws_url}?autostart=0") as second:
        await second.send("session.resume", session_id=created["session_id"],
                          resume_token=created["resume_token"], last_received_server_event_seq=1)
        assert (await second.recv())["type"] == "session.resumed"
        resumed = scrape(server)
        assert (lifecycle(resumed, "resumed"), resumed[("s2s_detached_sessions", ())]) == (1, 0)
        second.abort()
    await asyncio.sleep(1.0)  # past the grace
    expired = scrape(server)
    assert lifecycle(expired, "detached") == 2
    assert lifecycle(expired, "disconnect_grace_expired") == 1
    assert expired[("s2s_detached_sessions", ())] == 0
    assert lifecycle(expired, "evicted") == lifecycle(expired, "replaced") == 0
