"""Client events sent into a connection as it dies are sent again after the resume, once, and answered."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.client import ConnectionResumed, RealtimeClient
from speech_to_speech.client.sent_events import SentEvents
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.protocol.resume import LAST_CLIENT_EVENT_ID, LAST_FINISHED_RESPONSE_ID, STREAMED_CLIENT_EVENTS

from .conftest import ServerFactory
from .test_realtime_client import FAST_RETRY, TIMEOUT, collected, relayed


def _said(text: str) -> dict[str, Any]:
    return {"type": "conversation.item.create", "item": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}


async def test_events_sent_into_a_dead_connection_are_sent_again_after_the_resume_and_answered(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=["Noted."])
    with relayed(server) as relay:
        client = RealtimeClient(relay.ws_url, reconnect=FAST_RETRY, heartbeat_interval_s=None,
                                event_ack_interval_s=None)
        async with collected(client) as collector:
            first = await client.send(_said("the first thing"))
            await client.wait_for("conversation.item.added", timeout_s=TIMEOUT)
            relay.freeze()  # from here TCP takes what the client sends, and the server never reads it
            second = await client.send(_said("the second thing"))
            asked = await client.create_response()
            await asyncio.sleep(0.2)
            relay.cut_now()
            done = await client.wait_for("response.done", timeout_s=TIMEOUT)
    resumed = [e for e in collector.events if isinstance(e, ConnectionResumed)]
    assert len(resumed) == 1 and resumed[0].raw[LAST_CLIENT_EVENT_ID] == first
    assert done.raw["response"]["status"] == "completed"
    relayed_ids = [e.get("event_id") for e in relay.from_client]
    assert relayed_ids.count(first) == 1 and relayed_ids.count(second) == 1 and relayed_ids.count(asked) == 1
    assert relayed_ids.index(second) < relayed_ids.index(asked)  # in the order they were sent
    asked_llm = [[m.content for m in request.messages if m.role == "user"] for request in llm_requests]
    assert asked_llm == [["the first thing", "the second thing"]]  # each item once, one response


async def test_nothing_is_sent_again_when_the_server_had_read_it_all(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["Noted."])
    with relayed(server) as relay:
        client = RealtimeClient(relay.ws_url, reconnect=FAST_RETRY, heartbeat_interval_s=None,
                                event_ack_interval_s=None)
        async with collected(client):
            said = await client.send(_said("one thing"))
            await client.wait_for("conversation.item.added", timeout_s=TIMEOUT)
            relay.cut_now()
            resumed = await client.wait_for("session.resumed", timeout_s=TIMEOUT)
            await client.send(_said("another thing"))
            await client.wait_for("conversation.item.added", timeout_s=TIMEOUT)
    assert resumed.raw[LAST_CLIENT_EVENT_ID] == said
    assert [e.get("event_id") for e in relay.from_client].count(said) == 1


KINDS = st.sampled_from(["conversation.item.create", "response.create", "session.update",
                         *sorted(STREAMED_CLIENT_EVENTS)])


@given(kinds=st.lists(KINDS, max_size=30), cut=st.integers(min_value=-1, max_value=30))
def test_a_resume_gives_back_exactly_the_requests_sent_after_the_last_one_taken(kinds: list[str], cut: int) -> None:
    events = [{"type": kind, "event_id": f"evt_{n}"} for n, kind in enumerate(kinds)]
    sent = SentEvents()
    for event in events:
        sent.sent(event)
    requests = [e for e in events if e["type"] not in STREAMED_CLIENT_EVENTS]
    taken = requests[:cut] if 0 <= cut <= len(requests) else requests
    marker = taken[-1]["event_id"] if taken else None
    assert sent.lost({LAST_CLIENT_EVENT_ID: marker}) == requests[len(taken):]
    assert sent.lost({LAST_CLIENT_EVENT_ID: None}) == []  # what was given back is no longer held


def test_a_server_that_does_not_say_or_names_an_event_not_held_gets_nothing_again() -> None:
    sent = SentEvents(keep=2)
    for n in range(3):
        sent.sent({"type": "response.create", "event_id": f"evt_{n}"})
    assert sent.lost({"type": "session.resumed"}) == []
    for n in range(3):
        sent.sent({"type": "response.create", "event_id": f"evt_{n}"})
    assert sent.lost({LAST_CLIENT_EVENT_ID: "evt_0"}) == []  # evt_0 fell out: what followed it is unknown


async def test_a_resume_says_which_response_the_client_last_heard_end(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["Noted."])
    with relayed(server) as relay:
        client = RealtimeClient(relay.ws_url, reconnect=FAST_RETRY, heartbeat_interval_s=None,
                                event_ack_interval_s=None)
        async with collected(client):
            await client.send(_said("one thing"))
            await client.create_response()
            done = await client.wait_for("response.done", timeout_s=TIMEOUT)
            relay.cut_now()
            await client.wait_for("session.resumed", timeout_s=TIMEOUT)
    resumes = [e for e in relay.from_client if e.get("type") == "session.resume"]
    assert len(resumes) == 1 and resumes[0][LAST_FINISHED_RESPONSE_ID] == done.response_id
