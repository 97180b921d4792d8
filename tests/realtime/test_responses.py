"""response.create and its options; the terminal statuses a response can end with."""

from __future__ import annotations

import json

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ClientFactory, ServerFactory


async def test_metadata_is_echoed_in_created_and_done(connect: ClientFactory) -> None:
    metadata = {"client_event": "generate_reply", "turn": "7"}
    async with connect() as client:
        await client.send("response.create", response={"metadata": metadata})
        events = await client.response_cycle()
    created, done = events[0], events[-1]
    assert created["type"] == "response.created"
    assert created["response"]["status"] == "in_progress"
    assert created["response"]["metadata"] == metadata
    # response.done adds its playback figures (a JSON string, as metadata values are) to what it echoes.
    echoed = {key: value for key, value in done["response"]["metadata"].items() if key != "playback"}
    assert echoed == metadata
    assert json.loads(done["response"]["metadata"]["playback"])["generated_ms"] > 0
    assert done["response"]["status"] == "completed"


async def test_per_response_instructions_apply_to_that_response_only(
        connect: ClientFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    async with connect() as client:
        await client.update_session({"instructions": "Session instructions."})
        await client.send("response.create", response={"instructions": "Just this once."})
        await client.response_cycle()
        await client.send("response.create")
        await client.response_cycle()
    assert [r.instructions for r in llm_requests] == ["Just this once.", "Session instructions."]


async def test_per_response_tool_choice(connect: ClientFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    async with connect() as client:
        await client.send("response.create", response={"tool_choice": "none"})
        await client.response_cycle()
    assert llm_requests[0].tool_choice == "none"


async def test_text_modality_gives_output_text_and_no_audio(make_server: ServerFactory) -> None:
    reply = "Plain text, no voice. Two sentences."
    server = make_server(scripted_replies=[reply])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("response.create", response={"output_modalities": ["text"]})
        events = await client.response_cycle()
    kinds = types(events)
    assert not [k for k in kinds if k.startswith("response.output_audio")]
    assert "response.output_text.done" in kinds
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    done_text = next(e for e in events if e["type"] == "response.output_text.done")["text"]
    assert text == done_text == reply
    part = next(e for e in events if e["type"] == "response.content_part.added")["part"]
    assert part["type"] == "text"
    done = events[-1]["response"]
    assert done["output_modalities"] == ["text"]
    assert done["output"][0]["content"][0] == {"type": "output_text", "text": reply}


async def test_session_text_modality(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["Text only."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"output_modalities": ["text"]})
        await client.send("response.create")
        events = await client.response_cycle()
    assert "response.output_text.done" in types(events)
    assert not [k for k in types(events) if k.startswith("response.output_audio")]


async def test_incomplete_terminal(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["This reply runs out of tokens [[incomplete:max_output_tokens]]"])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("response.create")
        events = await client.response_cycle()
    done = events[-1]["response"]
    assert done["status"] == "incomplete"
    assert done["status_details"] == {"type": "incomplete", "reason": "max_output_tokens"}
    assert done["output"][0]["status"] == "incomplete"
    assert "error" not in types(events)


async def test_failed_terminal_sends_an_error_event(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["Partial output [[failed:provider exploded]]", "Recovered."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("response.create")
        events = await client.response_cycle()
        done = events[-1]["response"]
        assert done["status"] == "failed"
        assert done["status_details"]["type"] == "failed"
        errors = [e for e in events if e["type"] == "error"]
        assert len(errors) == 1
        assert "provider exploded" in errors[0]["error"]["message"]
        # The session keeps working after a failed response.
        await client.send("response.create")
        after = await client.response_cycle()
        assert after[-1]["response"]["status"] == "completed"


async def test_failed_and_incomplete_responses_leave_the_model_history(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=["Half [[failed:boom]]", "Cut [[incomplete:max_output_tokens]]", "Fine."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        for _ in range(3):
            await client.send("response.create")
            await client.response_cycle()
    last = llm_requests[-1]
    assert [m.content for m in last.messages if m.role == "assistant"] == []


async def test_tool_call_response(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=['Let me check. <tool_call>get_weather {"city": "Paris"}</tool_call>'])
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"tools": tools})
        await client.send("response.create")
        events = await client.response_cycle()
    call = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert call["name"] == "get_weather"
    assert json.loads(call["arguments"]) == {"city": "Paris"}
    done = events[-1]["response"]
    assert done["status"] == "completed"
    assert [item["type"] for item in done["output"]] == ["message", "function_call"]
    assert done["output"][1]["call_id"] == call["call_id"]
    assert call["output_index"] == 1
    # The spoken lead-in closes before the call's item opens.
    kinds = types(events)
    assert kinds.index("response.output_audio_transcript.done") < kinds.index("response.function_call_arguments.done")


async def test_function_call_output_then_follow_up(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=['<tool_call>get_time {}</tool_call>', "It is noon."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("response.create")
        events = await client.response_cycle()
        call = next(e for e in events if e["type"] == "response.function_call_arguments.done")
        await client.send("conversation.item.create", item={
            "type": "function_call_output", "call_id": call["call_id"], "output": '{"time": "12:00"}'})
        created = await client.wait_for("conversation.item.created")
        assert created["item"]["type"] == "function_call_output"
        await client.send("response.create")
        follow_up = await client.response_cycle()
    assert follow_up[-1]["response"]["status"] == "completed"
    tool_messages = [m for m in llm_requests[-1].messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [(call["call_id"], '{"time": "12:00"}')]


async def test_out_of_band_response_is_not_in_the_conversation(connect: ClientFactory) -> None:
    async with connect() as client:
        await client.send("response.create", response={"conversation": "none", "metadata": {"purpose": "probe"}})
        events = await client.response_cycle()
        done = events[-1]["response"]
        assert done["status"] == "completed"
        assert done["conversation_id"] is None
        assert not [e for e in events if e["type"].startswith("conversation.item")]
        event_id = await client.send("conversation.item.retrieve", item_id=done["output"][0]["id"])
        error = await client.wait_for("error")
        assert error["error"]["code"] == "conversation_item_not_found"
        assert error["error"]["event_id"] == event_id


async def test_max_output_tokens_per_session_and_response(
        connect: ClientFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    async with connect() as client:
        await client.update_session({"max_output_tokens": 200})
        await client.send("response.create", response={"max_output_tokens": 5})
        first = await client.response_cycle()
        await client.send("response.create")
        await client.response_cycle()
    assert first[0]["response"]["max_output_tokens"] == 5
    assert [r.max_output_tokens for r in llm_requests] == [5, 200]
