"""session.created / session.update over the wire: merge, stock-client fields, reasoning."""

from __future__ import annotations

from typing import Any

import pytest

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import is_error_for
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import FAST_SCRIPTED

from .conftest import ClientFactory, ServerFactory

RATE = 24000


async def test_session_created_on_connect(server: Any) -> None:
    async with RealtimeTestClient.connect(server.ws_url) as client:
        first = await client.recv()
        assert first["type"] == "session.created"
        session = first["session"]
        assert session["type"] == "realtime"
        assert session["output_modalities"] == ["audio"]
        assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
        assert session["audio"]["output"]["format"] == {"type": "audio/pcm", "rate": 24000}
        assert session["audio"]["input"]["turn_detection"]["type"] == "server_vad"


async def test_model_query_parameter_is_accepted(server: Any) -> None:
    async with RealtimeTestClient.connect(server.ws_url + "?model=gpt-realtime") as client:
        assert (await client.recv())["type"] == "session.created"


async def test_session_update_deep_merges(connect: ClientFactory) -> None:
    async with connect() as client:
        first = await client.update_session({"instructions": "Be terse.", "audio": {"output": {"voice": "verse"}}})
        assert first["session"]["instructions"] == "Be terse."
        assert first["session"]["audio"]["output"]["voice"] == "verse"

        second = await client.update_session({"audio": {"input": {"turn_detection": {"threshold": 0.8}}}})
        session = second["session"]
        # Earlier choices and untouched siblings survive a partial update.
        assert session["instructions"] == "Be terse."
        assert session["audio"]["output"]["voice"] == "verse"
        turn = session["audio"]["input"]["turn_detection"]
        assert turn["threshold"] == 0.8
        assert turn["type"] == "server_vad"
        assert turn["silence_duration_ms"] == 300
        assert turn["interrupt_response"] is True
        assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}


async def test_session_update_reaches_the_model(connect: ClientFactory,
                                                llm_requests: list[GenerateResponseRequest]) -> None:
    tools = [{"type": "function", "name": "get_time", "description": "Now.",
              "parameters": {"type": "object", "properties": {}}}]
    async with connect() as client:
        await client.update_session({"instructions": "Speak like a pirate.", "tools": tools, "tool_choice": "required"})
        await client.send("response.create")
        done = await client.wait_for("response.done")
        assert done["response"]["status"] == "completed"
    (request,) = llm_requests
    assert request.instructions == "Speak like a pirate."
    assert [tool["name"] for tool in request.tools] == ["get_time"]
    assert request.tool_choice == "required"


STOCK_FIELDS: list[dict[str, Any]] = [
    {"tracing": "auto"},
    {"tracing": None},
    {"audio": {"input": {"noise_reduction": None}}},
    {"audio": {"input": {"transcription": {"model": "gpt-4o-transcribe"}}}},
    {"audio": {"input": {"turn_detection": {"type": "semantic_vad", "eagerness": "auto"}}}},
    {"instructions": None},
    {"max_output_tokens": "inf"},
    {"tools": []},
    {"tool_choice": "auto"},
    {"output_modalities": ["audio"]},
    {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}},
               "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "alloy"}}},
]


@pytest.mark.parametrize("fields", STOCK_FIELDS, ids=lambda f: ",".join(f))
async def test_stock_client_fields_are_accepted(connect: ClientFactory, fields: dict[str, Any]) -> None:
    async with connect() as client:
        updated = await client.update_session(fields)
        assert updated["session"]["type"] == "realtime"


async def test_all_stock_fields_at_once_then_a_spoken_turn(connect: ClientFactory) -> None:
    """What the agents SDKs send on connect, in one update; the session still answers speech."""
    async with connect() as client:
        updated = await client.update_session({
            "instructions": None,
            "tracing": "auto",
            "max_output_tokens": "inf",
            "tools": [],
            "audio": {"input": {"noise_reduction": None,
                                "transcription": {"model": "whisper-1"},
                                "turn_detection": {"type": "semantic_vad", "eagerness": "auto"}}},
        })
        turn = updated["session"]["audio"]["input"]["turn_detection"]
        # This server's scripted VAD has no turn detector: silence ends turns, and the echo says so.
        assert turn["type"] == "server_vad" and "eagerness" not in turn
        assert turn["silence_duration_ms"] == FAST_SCRIPTED["min_silence_ms"]
        await client.append_audio(spoken_turn(RATE), RATE)
        done = await client.wait_for("response.done")
        assert done["response"]["status"] == "completed"


async def test_instructions_null_keeps_startup_instructions(make_server: ServerFactory) -> None:
    server = make_server(init_chat_prompt="Startup prompt.")
    async with RealtimeTestClient.connect(server.ws_url) as client:
        created = await client.wait_for("session.created")
        assert created["session"]["instructions"] == "Startup prompt."
        await client.update_session({"instructions": "Other."})
        updated = await client.update_session({"instructions": None})
        assert updated["session"]["instructions"] == "Startup prompt."


async def test_rejected_update_changes_nothing(connect: ClientFactory) -> None:
    async with connect() as client:
        await client.update_session({"instructions": "Kept."})
        event_id = await client.send("session.update", session={
            "type": "realtime", "instructions": "Dropped.",
            "audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": 2.0}}}})
        error = await client.wait_for(is_error_for(event_id))
        assert error["error"]["code"] == "invalid_request_error"
        again = await client.update_session({})
        assert again["session"]["instructions"] == "Kept."
        assert again["session"]["audio"]["input"]["turn_detection"]["threshold"] != 2.0


# ------------------------------------------------------------------ reasoning


async def test_reasoning_rules(make_server: ServerFactory) -> None:
    server = make_server(responses_api_reasoning_effort="low")
    async with RealtimeTestClient.connect(server.ws_url) as client:
        created = await client.wait_for("session.created")
        assert created["session"]["reasoning"] == {"effort": "low"}

        high = await client.update_session({"reasoning": {"effort": "high"}})
        assert high["session"]["reasoning"] == {"effort": "high"}
        kept = await client.update_session({"reasoning": {}})  # a partial object keeps the effort
        assert kept["session"]["reasoning"] == {"effort": "high"}
        restored = await client.update_session({"reasoning": None})  # null restores the startup setting
        assert restored["session"]["reasoning"] == {"effort": "low"}

        event_id = await client.send("session.update", session={"type": "realtime", "reasoning": {"effort": "max"}})
        error = await client.wait_for(is_error_for(event_id))
        assert error["error"]["type"] == "invalid_request_error"
        after = await client.update_session({})
        assert after["session"]["reasoning"] == {"effort": "low"}


async def test_reasoning_none_is_an_accepted_extension(connect: ClientFactory) -> None:
    def as_ga(event: dict[str, Any]) -> dict[str, Any]:
        # "none" is our documented extension; the GA schema lists minimal..xhigh.
        reasoning = (event.get("session") or {}).get("reasoning")
        if reasoning and reasoning.get("effort") == "none":
            reasoning["effort"] = "minimal"
        return event

    async with connect(extension_view=as_ga) as client:
        updated = await client.update_session({"reasoning": {"effort": "none"}})
        assert updated["session"]["reasoning"] == {"effort": "none"}


async def test_reasoning_reaches_the_model_per_session_and_per_response(
        connect: ClientFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    async with connect() as client:
        await client.update_session({"reasoning": {"effort": "high"}})
        await client.send("response.create", response={"reasoning": {"effort": "minimal"}})
        await client.wait_for("response.done")
        await client.send("response.create")
        await client.wait_for("response.done")
        event_id = await client.send("response.create", response={"reasoning": {"effort": "extreme"}})
        error = await client.wait_for(is_error_for(event_id))
        assert error["error"]["type"] == "invalid_request_error"
    assert [r.reasoning_effort for r in llm_requests] == ["minimal", "high"]


# ------------------------------------------------------------------ language


async def test_session_language_is_validated_and_reaches_the_pipeline(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    # Scripted handlers have no language control: a single declared language is all they honour.
    server = make_server(stt_supported_languages=["fr"], tts_supported_languages=["fr"])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        chosen = await client.update_session({"audio": {"input": {"transcription": {"language": " French "}}}})
        event_id = await client.send("session.update", session={
            "type": "realtime", "audio": {"input": {"transcription": {"language": "de"}}}})
        error = await client.wait_for(is_error_for(event_id))
        assert error["error"]["type"] == "invalid_request_error"
        # The refused language changed nothing: the session object still names the one chosen before.
        after = await client.update_session({})
        transcription = after["session"]["audio"]["input"]["transcription"]
        assert transcription == chosen["session"]["audio"]["input"]["transcription"]
        await client.send("response.create")
        await client.wait_for("response.done")
    assert llm_requests[-1].language == "fr"
