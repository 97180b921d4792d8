"""livekit-plugins-openai ``RealtimeModel``, unmodified, against our server.

The RealtimeSession is driven the way LiveKit's AgentSession drives it: audio
frames in, ``generation_created`` streams out, a tool's output put back with
``update_chat_ctx`` and answered with ``generate_reply()`` (which times out
unless ``response.created`` echoes the request's metadata). Only ``base_url``
and a dummy API key differ from talking to OpenAI.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
from compat_servers import STORY, serving_story

livekit_openai = pytest.importorskip(
    "livekit.plugins.openai", reason="livekit-plugins-openai is not installed"
)

from livekit import rtc  # noqa: E402
from livekit.agents import llm  # noqa: E402

STEP_TIMEOUT = 20.0
RATE = 24000


@llm.function_tool
async def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"sunny, 21 degrees in {city}"


class Generation:
    """What one ``generation_created`` streamed: message texts, audio, function calls."""

    def __init__(self, event: llm.GenerationCreatedEvent) -> None:
        self.event = event
        self.texts: list[str] = []
        self.audio_samples = 0
        self.calls: list[llm.FunctionCall] = []

    async def consume(self) -> Generation:
        async def message(msg: llm.MessageGeneration) -> None:
            async def text() -> None:
                parts = [str(piece) async for piece in msg.text_stream]
                self.texts.append("".join(parts))

            async def audio() -> None:
                async for frame in msg.audio_stream:
                    assert frame.sample_rate == RATE
                    self.audio_samples += frame.samples_per_channel

            await asyncio.gather(text(), audio())

        async def messages() -> None:
            await asyncio.gather(*[message(m) async for m in self.event.message_stream])

        async def calls() -> None:
            self.calls.extend([c async for c in self.event.function_stream])

        await asyncio.gather(messages(), calls())
        return self


@dataclass
class Client:
    """A livekit RealtimeSession on our server, with what it reported: raw server events, errors, generations."""

    session: Any
    recorder: Any
    server_events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[Any] = field(default_factory=list)
    generations: list[asyncio.Task[Generation]] = field(default_factory=list)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.server_events if e.get("type") == kind]

    async def speak(self, pieces: Iterable[bytes]) -> None:
        """Push the pieces as audio frames, paced like a microphone."""
        for piece in pieces:
            self.session.push_audio(rtc.AudioFrame(piece, RATE, 1, len(piece) // 2))
            await asyncio.sleep(0.01)

    async def generation(self, index: int) -> Generation:
        """The ``index``-th generation, once created and fully streamed."""
        await self.recorder.wait(lambda: len(self.generations) > index, f"generation {index + 1}", STEP_TIMEOUT)
        return await asyncio.wait_for(self.generations[index], STEP_TIMEOUT)


@contextlib.asynccontextmanager
async def livekit_client(server: Any, recorder: Any, **model_options: Any) -> AsyncIterator[Client]:
    """A ``RealtimeModel`` session against ``server``, its events recorded; closed (quietly) on exit."""
    model = livekit_openai.realtime.RealtimeModel(
        model="speech-to-speech",
        base_url=server.http_url + "/v1",
        api_key="sk-local-not-checked",
        **model_options,
    )
    session = model.session()
    client = Client(session, recorder)
    session.on("openai_server_event_received", client.server_events.append)
    session.on("openai_server_event_received", recorder.add)
    session.on("error", client.errors.append)
    session.on(
        "generation_created",
        lambda ev: client.generations.append(asyncio.create_task(Generation(ev).consume())),
    )
    try:
        yield client
    finally:
        for task in client.generations:
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(session.aclose(), 10)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(model.aclose(), 10)


async def test_livekit_realtime_model_spoken_turns_and_tool_call(
    scripted_server, conversation, speech, audio_chunks, recorder, caplog
) -> None:
    caplog.set_level(logging.WARNING, logger="livekit")
    async with livekit_client(scripted_server, recorder) as client:
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
    async with livekit_client(scripted_server, recorder, turn_detection=None) as client:
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
    async with livekit_client(story_server, recorder) as client:
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
