"""livekit-plugins-openai ``RealtimeModel``, unmodified, against our server.

The RealtimeSession is driven the way LiveKit's AgentSession drives it: audio
frames in, ``generation_created`` streams out, a tool's output put back with
``update_chat_ctx`` and answered with ``generate_reply()`` (which times out
unless ``response.created`` echoes the request's metadata). Only ``base_url``
and a dummy API key differ from talking to OpenAI.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from compat_servers import STORY, serving_story

pytest.importorskip("livekit.plugins.openai", reason="livekit-plugins-openai is not installed")

from livekit import rtc
from livekit.agents import llm
from livekit_harness import RATE, STEP_TIMEOUT, livekit_client, stock_model


@llm.function_tool
async def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"sunny, 21 degrees in {city}"


async def test_livekit_realtime_model_spoken_turns_and_tool_call(
    scripted_server, conversation, speech, audio_chunks, recorder, caplog
) -> None:
    caplog.set_level(logging.WARNING, logger="livekit")
    async with livekit_client(stock_model(scripted_server), recorder) as client:
        session, of = client.session, client.of
        transcripts: list[str] = []  # final ones
        interim: list[str] = []  # the plugin's running concatenation of the transcription deltas
        session.on(
            "input_audio_transcription_completed",
            lambda ev: (transcripts if ev.is_final else interim).append(ev.transcript),
        )

        await asyncio.wait_for(
            session.update_instructions("You are a helpful voice assistant."), STEP_TIMEOUT
        )
        await asyncio.wait_for(session.update_tools([get_weather]), STEP_TIMEOUT)
        await recorder.wait(lambda: of("session.created"), "session.created", STEP_TIMEOUT)
        await recorder.wait(
            lambda: any(e["session"].get("tools") for e in of("session.updated")),
            "tools in session",
            STEP_TIMEOUT,
        )

        # Turn 1: server VAD ends the turn; a spoken answer streams as one generation.
        await client.speak(audio_chunks(speech()))
        first = await client.generation(0)
        assert transcripts[:1] == [conversation.first_transcript]
        assert interim and all(conversation.first_transcript.startswith(t) for t in interim), interim
        assert first.texts == [conversation.first_reply]
        assert first.audio_samples > RATE * 0.1
        assert not first.event.user_initiated

        # Turn 2: the reply is a function call.
        await client.speak(audio_chunks(speech()))
        second = await client.generation(1)
        assert transcripts == [conversation.first_transcript, conversation.tool_transcript]
        assert interim[-1] == conversation.tool_transcript  # deltas concatenate to the transcript exactly
        assert [(c.name, json.loads(c.arguments)) for c in second.calls] == [
            ("get_weather", {"city": "Paris"})
        ]

        # What AgentSession does with a tool call: run it, add its output, ask for a reply.
        call = second.calls[0]
        output = await get_weather(**json.loads(call.arguments))
        chat_ctx = session.chat_ctx.copy()
        chat_ctx.items.append(
            llm.FunctionCallOutput(call_id=call.call_id, name=call.name, output=output, is_error=False)
        )
        await asyncio.wait_for(session.update_chat_ctx(chat_ctx), STEP_TIMEOUT)
        created = await asyncio.wait_for(session.generate_reply(), STEP_TIMEOUT)
        assert created.user_initiated, "response.created did not carry generate_reply()'s metadata"
        third = await client.generation(2)
        assert third.event is created
        assert third.texts == [conversation.tool_reply]
        assert third.audio_samples > 0

        await recorder.wait(lambda: len(of("response.done")) >= 3, "three response.done", STEP_TIMEOUT)
        assert [e["response"]["status"] for e in of("response.done")] == ["completed"] * 3
        outputs = [i for i in session.chat_ctx.items if i.type == "function_call_output"]
        assert [o.output for o in outputs] == ["sunny, 21 degrees in Paris"]
        assert client.errors == [], f"the plugin reported errors: {client.errors}"
        complaints = [
            r.getMessage()
            for r in caplog.records
            if r.name.startswith("livekit") and r.levelno >= logging.WARNING
        ]
        assert complaints == [], f"the plugin logged complaints: {complaints}"


async def test_livekit_realtime_model_manual_turns(scripted_server, conversation, speech, recorder) -> None:
    """``turn_detection=None``: the agent commits the turn and asks for the reply itself, exactly once."""
    async with livekit_client(stock_model(scripted_server, turn_detection=None), recorder) as client:
        session, of = client.session, client.of
        await asyncio.wait_for(
            session.update_instructions("You are a helpful voice assistant."), STEP_TIMEOUT
        )
        await recorder.wait(
            lambda: any(
                e["session"]["audio"]["input"]["turn_detection"] is None for e in of("session.updated")
            ),
            "session.updated with turn_detection null",
            STEP_TIMEOUT,
        )
        pcm = speech()
        session.push_audio(rtc.AudioFrame(pcm, RATE, 1, len(pcm) // 2))
        # Server VAD is off: the whole utterance, silence included, stays uncommitted and unanswered.
        await asyncio.sleep(1.0)
        assert of("response.created") == [] and of("input_audio_buffer.committed") == []
        session.commit_audio()
        created = await asyncio.wait_for(session.generate_reply(), STEP_TIMEOUT)
        assert created.user_initiated
        reply = await asyncio.wait_for(client.generations[0], STEP_TIMEOUT)
        assert reply.texts == [conversation.first_reply]
        assert reply.audio_samples > 0
        await recorder.wait(lambda: of("response.done"), "response.done", STEP_TIMEOUT)
        completed = of("conversation.item.input_audio_transcription.completed")
        assert [e["transcript"] for e in completed] == [conversation.first_transcript]
        await asyncio.sleep(1.0)  # nothing more follows on its own
        assert len(of("response.created")) == 1 and len(client.generations) == 1
        assert of("input_audio_buffer.speech_started") == []  # no server VAD, no VAD events
        assert client.errors == [], f"the plugin reported errors: {client.errors}"


@pytest.fixture
def story_server() -> Any:
    with serving_story(STORY, "Okay, I will stop.") as server:
        yield server


async def test_livekit_realtime_model_barge_in(story_server, speech, audio_chunks, recorder) -> None:
    """Speech over the answer: its generation ends cut short, then the new turn's generation streams."""
    async with livekit_client(stock_model(story_server), recorder) as client:
        server_events, generations = client.server_events, client.generations
        speech_started: list[Any] = []
        client.session.on("input_speech_started", speech_started.append)

        await recorder.wait(lambda: server_events, "session.created", STEP_TIMEOUT)
        await client.speak(audio_chunks(speech()))
        await recorder.wait(
            lambda: any(e["type"] == "response.output_audio.delta" for e in server_events),
            "the story's first audio",
            STEP_TIMEOUT,
        )
        await client.speak(audio_chunks(speech()))
        story = await asyncio.wait_for(generations[0], STEP_TIMEOUT)
        assert len(story.texts) == 1 and STORY.startswith(story.texts[0]) and len(story.texts[0]) < len(STORY)
        await recorder.wait(lambda: len(generations) > 1, "the second generation", STEP_TIMEOUT)
        reply = await asyncio.wait_for(generations[1], STEP_TIMEOUT)
        assert reply.texts == ["Okay, I will stop."]
        assert len(speech_started) == 2
        done = [e["response"] for e in server_events if e["type"] == "response.done"]
        assert [(d["status"], (d["status_details"] or {}).get("reason")) for d in done] == [
            ("cancelled", "turn_detected"),
            ("completed", None),
        ]
        assert client.errors == [], f"the plugin reported errors: {client.errors}"
