"""Every protocol error code, provoked over the wire, answered with the client's event_id."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from speech_to_speech.testing.event_matchers import is_error_for, types
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ClientFactory, ServerFactory

BAD_EVENTS: list[tuple[str, dict[str, Any], str]] = [
    ("unknown type", {"type": "session.frobnicate"}, "unknown_or_invalid_event"),
    ("missing type", {"session": {}}, "unknown_or_invalid_event"),
    ("type not a string", {"type": 7}, "unknown_or_invalid_event"),
    ("transcription session", {"type": "session.update", "session": {"type": "transcription"}},
     "invalid_session_type"),
    ("threshold 2.0", {"type": "session.update", "session": {
        "type": "realtime", "audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": 2.0}}}}},
     "invalid_request_error"),
    ("session not an object", {"type": "session.update", "session": "realtime"}, "invalid_request_error"),
    ("unknown audio format", {"type": "session.update", "session": {
        "type": "realtime", "audio": {"output": {"format": {"type": "audio/mp3"}}}}}, "invalid_request_error"),
    ("two modalities", {"type": "session.update", "session": {"type": "realtime",
                                                               "output_modalities": ["audio", "text"]}},
     "invalid_request_error"),
    ("bad session tool_choice", {"type": "session.update", "session": {"type": "realtime",
                                                                        "tool_choice": "sometimes"}},
     "invalid_request_error"),
    ("bad tool name", {"type": "session.update", "session": {"type": "realtime",
                                                              "tools": [{"type": "function", "name": "a b"}]}},
     "invalid_request_error"),
    ("max_output_tokens 0", {"type": "session.update", "session": {"type": "realtime", "max_output_tokens": 0}},
     "invalid_request_error"),
    ("bad audio base64", {"type": "input_audio_buffer.append", "audio": "not base64!"}, "invalid_request_error"),
    ("odd PCM16 bytes", {"type": "input_audio_buffer.append", "audio": base64.b64encode(b"abc").decode()},
     "invalid_request_error"),
    ("audio not a string", {"type": "input_audio_buffer.append", "audio": 12}, "invalid_request_error"),
    ("bad response tool_choice", {"type": "response.create", "response": {"tool_choice": {"type": "function"}}},
     "invalid_request_error"),
    ("bad response modalities", {"type": "response.create", "response": {"output_modalities": ["smell"]}},
     "invalid_request_error"),
    ("metadata not strings", {"type": "response.create", "response": {"metadata": {"n": 1}}},
     "invalid_request_error"),
    ("bad item type", {"type": "conversation.item.create", "item": {"type": "telepathy"}}, "invalid_request_error"),
    ("item without content", {"type": "conversation.item.create", "item": {"type": "message", "role": "user"}},
     "invalid_request_error"),
    ("item bad role", {"type": "conversation.item.create", "item": {
        "type": "message", "role": "narrator", "content": [{"type": "input_text", "text": "hi"}]}},
     "invalid_request_error"),
    ("user item with output text", {"type": "conversation.item.create", "item": {
        "type": "message", "role": "user", "content": [{"type": "output_text", "text": "hi"}]}},
     "invalid_request_error"),
    ("tool output without call_id", {"type": "conversation.item.create", "item": {
        "type": "function_call_output", "output": "{}"}}, "invalid_request_error"),
    ("unknown previous item", {"type": "conversation.item.create", "previous_item_id": "item_nope", "item": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}},
     "conversation_item_not_found"),
    ("retrieve unknown", {"type": "conversation.item.retrieve", "item_id": "item_nope"},
     "conversation_item_not_found"),
    ("truncate unknown", {"type": "conversation.item.truncate", "item_id": "item_nope", "content_index": 0,
                          "audio_end_ms": 0}, "conversation_item_not_found"),
    ("delete unknown", {"type": "conversation.item.delete", "item_id": "item_nope"}, "conversation_item_not_found"),
    ("empty commit", {"type": "input_audio_buffer.commit"}, "input_audio_buffer_commit_empty"),
]


async def _still_works(client: RealtimeTestClient) -> None:
    await client.send("response.create")
    events = await client.collect_until("response.done")
    assert events[-1]["response"]["status"] == "completed"
    assert "error" not in types(events)


@pytest.mark.parametrize(("event", "code"), [(e, c) for _, e, c in BAD_EVENTS], ids=[n for n, _, _ in BAD_EVENTS])
async def test_error_carries_code_and_event_id(connect: ClientFactory, event: dict[str, Any], code: str) -> None:
    async with connect() as client:
        event_id = await client.send_event(event)
        error = await client.wait_for("error")
        assert error["error"]["event_id"] == event_id
        assert error["error"]["code"] == code
        assert error["error"]["type"] in ("invalid_request_error", "server_error")
        assert error["error"]["message"]
        await _still_works(client)


async def test_invalid_json(connect: ClientFactory) -> None:
    async with connect() as client:
        await client.send_raw("{not json")
        error = await client.wait_for("error")
        assert error["error"]["code"] == "unknown_or_invalid_event"
        assert error["error"]["event_id"] is None  # nothing to name: the event could not be read
        await client.send_raw('["an", "array"]')
        assert (await client.wait_for("error"))["error"]["code"] == "unknown_or_invalid_event"
        await client.send_raw(b"\xff\xfe binary")
        assert (await client.wait_for("error"))["error"]["code"] == "unknown_or_invalid_event"
        await _still_works(client)


async def test_response_create_while_one_is_active(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["A reply long enough to still be going on."], scripted_token_delay_ms=20)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("response.create")
        created = await client.wait_for("response.created")
        event_id = await client.send("response.create", response={"metadata": {"second": "yes"}})
        events = await client.collect_until(is_error_for(event_id))
        error = events[-1]["error"]
        assert error["code"] == "conversation_already_has_active_response"
        assert created["response"]["id"] in error["message"]
        rest = await client.collect_until("response.done")
        done = rest[-1]["response"]
        assert done["id"] == created["response"]["id"]
        assert done["status"] == "completed"
        assert types(events + rest).count("response.created") == 0  # the rejected create made none
        await _still_works(client)


async def test_errors_do_not_end_the_session(connect: ClientFactory) -> None:
    """Many bad events in a row, then a normal turn."""
    async with connect() as client:
        ids = [await client.send_event(event) for _, event, _ in BAD_EVENTS]
        errors = [await client.wait_for("error") for _ in ids]
        assert [e["error"]["event_id"] for e in errors] == ids
        await _still_works(client)
