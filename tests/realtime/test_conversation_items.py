"""conversation.item.create / retrieve / truncate / delete over the wire."""

from __future__ import annotations

from typing import Any

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import is_error_for, types
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ClientFactory, ServerFactory

RATE = 24000


def _user_text(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}], **extra}


async def _retrieve(client: RealtimeTestClient, item_id: str) -> dict[str, Any]:
    await client.send("conversation.item.retrieve", item_id=item_id)
    event = await client.wait_for("conversation.item.retrieved")
    return dict(event["item"])


async def test_input_text_item_is_created_not_answered(
        connect: ClientFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    async with connect() as client:
        await client.send("conversation.item.create", item=_user_text("Hello there."))
        events = await client.collect_until("conversation.item.done")
        assert types(events) == ["conversation.item.created", "conversation.item.added", "conversation.item.done"]
        item = events[0]["item"]
        assert events[0]["previous_item_id"] is None
        assert item["type"] == "message" and item["role"] == "user"
        assert item["content"] == [{"type": "input_text", "text": "Hello there."}]
        assert all(e["item"]["id"] == item["id"] for e in events)
        assert await client.barrier() == []  # no response on its own
        assert await _retrieve(client, item["id"]) == item

        await client.send("response.create")
        assert (await client.response_cycle())[-1]["response"]["status"] == "completed"
    assert [(m.role, m.content) for m in llm_requests[0].messages] == [("user", "Hello there.")]


async def test_items_chain_and_client_ids(connect: ClientFactory) -> None:
    async with connect() as client:
        await client.send("conversation.item.create", item=_user_text("One.", id="item_client_one"))
        first = await client.wait_for("conversation.item.created")
        assert first["item"]["id"] == "item_client_one"
        await client.send("conversation.item.create", item=_user_text("Two."))
        second = await client.wait_for("conversation.item.created")
        assert second["previous_item_id"] == "item_client_one"
        event_id = await client.send("conversation.item.create", item=_user_text("Again.", id="item_client_one"))
        error = await client.wait_for(is_error_for(event_id))
        assert error["error"]["type"] == "invalid_request_error"


async def test_function_call_output_item(connect: ClientFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    async with connect() as client:
        await client.send("conversation.item.create", item={
            "type": "function_call_output", "call_id": "call_abc", "output": '{"ok": true}'})
        events = await client.collect_until("conversation.item.done")
        item = events[0]["item"]
        assert types(events)[0] == "conversation.item.created"
        assert (item["type"], item["call_id"], item["output"]) == ("function_call_output", "call_abc", '{"ok": true}')
        assert await client.barrier() == []
        assert await _retrieve(client, item["id"]) == item


async def test_spoken_and_assistant_items_retrieve_as_delivered(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Spoken words."], scripted_replies=["Spoken answer.", "Text answer."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until("response.done")
        user_id = next(e for e in events if e["type"] == "input_audio_buffer.committed")["item_id"]
        assistant_id = events[-1]["response"]["output"][0]["id"]

        user = await _retrieve(client, user_id)
        assert user["role"] == "user"
        assert user["content"] == [{"type": "input_audio", "transcript": "Spoken words."}]  # no audio bytes
        assistant = await _retrieve(client, assistant_id)
        assert assistant["role"] == "assistant" and assistant["status"] == "completed"
        assert assistant["content"] == [{"type": "output_audio", "transcript": "Spoken answer."}]

        await client.send("response.create", response={"output_modalities": ["text"]})
        done = (await client.response_cycle())[-1]
        text_item = await _retrieve(client, done["response"]["output"][0]["id"])
        assert text_item["content"] == [{"type": "output_text", "text": "Text answer."}]


async def test_assistant_item_retrieved_during_its_response(make_server: ServerFactory) -> None:
    reply = "First sentence here. " + " ".join(["More words follow."] * 20)
    server = make_server(scripted_replies=[reply], scripted_token_delay_ms=15)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("response.create")
        added = await client.wait_for("response.output_audio_transcript.delta")
        item = await _retrieve(client, added["item_id"])
        assert item["status"] == "in_progress"
        assert item["content"][0]["type"] == "output_audio"
        assert reply.startswith(item["content"][0]["transcript"])
        await client.send("response.cancel")
        await client.wait_for("response.done")


async def test_delete_and_truncate(connect: ClientFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    async with connect() as client:
        await client.send("conversation.item.create", item=_user_text("Forget me."))
        gone = (await client.wait_for("conversation.item.created"))["item"]["id"]
        await client.send("conversation.item.create", item=_user_text("Keep me."))
        await client.wait_for("conversation.item.done")
        await client.send("conversation.item.delete", item_id=gone)
        deleted = await client.wait_for("conversation.item.deleted")
        assert deleted["item_id"] == gone
        event_id = await client.send("conversation.item.retrieve", item_id=gone)
        assert (await client.wait_for(is_error_for(event_id)))["error"]["code"] == "conversation_item_not_found"

        await client.send("response.create")
        events = await client.response_cycle()
        assistant = events[-1]["response"]["output"][0]["id"]
        # Truncate cuts the item where the client stopped playing it (see test_playback for the cut).
        await client.send("conversation.item.truncate", item_id=assistant, content_index=0, audio_end_ms=100)
        assert types(await client.barrier()) == ["conversation.item.truncated"]
    assert [m.content for m in llm_requests[0].messages] == ["Keep me."]


async def test_system_item(connect: ClientFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    async with connect() as client:
        await client.send("conversation.item.create", item={
            "type": "message", "role": "system", "content": [{"type": "input_text", "text": "Be brief."}]})
        await client.wait_for("conversation.item.done")
        await client.send("response.create")
        await client.response_cycle()
    assert [(m.role, m.content) for m in llm_requests[0].messages] == [("system", "Be brief.")]
