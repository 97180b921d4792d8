"""openai-agents (Python) RealtimeRunner/RealtimeSession, unmodified, against our server.

Only the model config's ``url`` (and a dummy API key) differ from talking to OpenAI.
The SDK validates every server event with the ``openai`` package's GA models and
reports a failure as a session ``error`` event, so "no error events" is a schema check.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from agents import function_tool
from agents.realtime import RealtimeAgent, RealtimeRunner, RealtimeSession
from compat_servers import serving_story

from speech_to_speech.testing.server import RunningServer

STEP_TIMEOUT = 20.0
INSTRUCTIONS = "You are a helpful voice assistant. Answer briefly."
STORY = " ".join(
    f"Chapter {n}: the little robot walked along the shore, counting the waves and the shells it found."
    for n in range(1, 5)
)


def _text(item: Any) -> str:
    return "".join(
        (getattr(part, "transcript", None) or getattr(part, "text", None) or "") for part in item.content
    )


def _message(history: list[Any], role: str, text: str) -> Any:
    return next((i for i in history if i.type == "message" and i.role == role and _text(i) == text), None)


class Client:
    """One RealtimeSession and what it has emitted, with the views the tests wait on."""

    def __init__(
        self, session: RealtimeSession, recorder: Any, audio_chunks: Callable[..., list[bytes]]
    ) -> None:
        self.session = session
        self.recorder = recorder
        self._chunks = audio_chunks

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.recorder.events if e.type == kind]

    def raw(self, kind: str) -> list[dict[str, Any]]:
        """Server events of type ``kind`` as the SDK received them."""
        return [
            e.data.data
            for e in self.of("raw_model_event")
            if e.data.type == "raw_server_event" and e.data.data.get("type") == kind
        ]

    def history(self) -> list[Any]:
        # The public view of the conversation: the latest history_updated event.
        updates = self.of("history_updated")
        return list(updates[-1].history) if updates else []

    async def wait_message(self, role: str, text: str, label: str) -> Any:
        return await self.recorder.wait(lambda: _message(self.history(), role, text), label, STEP_TIMEOUT)

    async def speak(self, pcm: bytes) -> None:
        for piece in self._chunks(pcm):
            await self.session.send_audio(piece)
            await asyncio.sleep(0.01)

    def check_clean(self, caplog: pytest.LogCaptureFixture) -> None:
        errors = [e.error for e in self.of("error")]
        assert errors == [], f"the SDK reported errors: {errors}"
        complaints = [
            r.getMessage()
            for r in caplog.records
            if r.name.startswith("openai.agents") and r.levelno >= logging.WARNING
        ]
        assert complaints == [], f"the SDK logged complaints: {complaints}"


@contextlib.asynccontextmanager
async def connect(
    url: str, agent: RealtimeAgent, recorder: Any, audio_chunks: Callable[..., list[bytes]]
) -> AsyncIterator[Client]:
    runner = RealtimeRunner(agent, config={"model_settings": {"model_name": "speech-to-speech"}})
    session = await asyncio.wait_for(
        runner.run(model_config={"url": url, "api_key": "sk-local-not-checked"}), STEP_TIMEOUT
    )

    async def consume() -> None:
        async for event in session:
            recorder.add(event)

    async with session:
        consumer = asyncio.create_task(consume())
        try:
            client = Client(session, recorder, audio_chunks)
            await recorder.wait(lambda: client.raw("session.updated"), "session.updated", STEP_TIMEOUT)
            yield client
        finally:
            consumer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await consumer


async def test_openai_agents_python_spoken_turns_and_tool_call(
    scripted_server, conversation, speech, audio_chunks, recorder, caplog
) -> None:
    caplog.set_level(logging.WARNING, logger="openai.agents")
    calls: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        calls.append(city)
        return f"sunny, 21 degrees in {city}"

    agent = RealtimeAgent(name="Assistant", instructions=INSTRUCTIONS, tools=[get_weather])
    async with connect(scripted_server.ws_url, agent, recorder, audio_chunks) as client:
        assert client.raw("session.created"), "no session.created"
        updated = client.raw("session.updated")[-1]["session"]
        assert [t["name"] for t in updated["tools"]] == ["get_weather"]
        assert updated["instructions"] == INSTRUCTIONS

        # Turn 1: a spoken question, a spoken answer.
        await client.speak(speech())
        user = await client.wait_message("user", conversation.first_transcript, "the user transcript")
        assert user.content[0].type == "input_audio"
        await recorder.wait(lambda: client.of("agent_end"), "agent_end", STEP_TIMEOUT)
        answer = await client.wait_message("assistant", conversation.first_reply, "the assistant transcript")
        assert answer.status == "completed"
        audio = client.of("audio")
        assert audio, "no audio events"
        assert sum(len(e.audio.data) for e in audio) > 24000 * 2 * 0.1
        assert {e.item_id for e in audio} == {answer.item_id}
        assert client.raw("response.done")[-1]["response"]["status"] == "completed"

        # Turn 2: the reply is a tool call; the SDK runs it, sends the output and asks for a response.
        await client.speak(speech())
        await recorder.wait(lambda: client.of("tool_end"), "tool_end", STEP_TIMEOUT)
        tool_end = client.of("tool_end")[0]
        assert tool_end.tool.name == "get_weather"
        assert json.loads(tool_end.arguments) == {"city": "Paris"}
        assert calls == ["Paris"]
        reply = await client.wait_message("assistant", conversation.tool_reply, "the follow-up reply")
        await recorder.wait(
            lambda: len(client.raw("response.done")) >= 3, "the follow-up response.done", STEP_TIMEOUT
        )
        statuses = [e["response"]["status"] for e in client.raw("response.done")]
        assert statuses == ["completed", "completed", "completed"]

        items = client.history()
        question = _message(items, "user", conversation.tool_transcript)
        call = next(i for i in items if i.type == "function_call")
        assert call.name == "get_weather"
        assert call.output == "sunny, 21 degrees in Paris"
        order = [i.item_id for i in items]
        assert order.index(question.item_id) < order.index(call.item_id) < order.index(reply.item_id)
        client.check_clean(caplog)


@pytest.fixture
def story_server() -> Any:
    with serving_story(STORY, "Okay, I will stop.", "You typed hello.") as server:
        yield server


async def test_openai_agents_python_barge_in_then_typed_message(
    story_server: RunningServer, speech, audio_chunks, recorder, caplog
) -> None:
    caplog.set_level(logging.WARNING, logger="openai.agents")
    agent = RealtimeAgent(name="Assistant", instructions=INSTRUCTIONS)
    async with connect(story_server.ws_url, agent, recorder, audio_chunks) as client:
        await client.speak(speech())
        first_audio = await recorder.wait(lambda: client.of("audio"), "the story's first audio", STEP_TIMEOUT)
        story_id = first_audio[0].audio.response_id

        # Barge-in: the server cancels the story itself (turn_detected); the SDK stops its playback.
        await client.speak(speech())
        done = await recorder.wait(
            lambda: next((e for e in client.raw("response.done") if e["response"]["id"] == story_id), None),
            "response.done of the story",
            STEP_TIMEOUT,
        )
        assert done["response"]["status"] == "cancelled"
        assert done["response"]["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        await recorder.wait(lambda: client.of("audio_interrupted"), "audio_interrupted", STEP_TIMEOUT)
        await client.wait_message("user", "Stop, please.", "the interrupting turn")
        await client.wait_message("assistant", "Okay, I will stop.", "the reply to the interrupting turn")
        late = [e for e in client.of("audio") if e.audio.response_id == story_id]
        assert sum(len(e.audio.data) for e in late) < len(STORY) * 0.06 * 24000 * 2, (
            "the whole story was sent"
        )

        # A typed message: conversation.item.create (input_text) + response.create.
        await client.session.send_message("Hello.")
        typed = await client.wait_message("user", "Hello.", "the typed message in history")
        assert typed.content[0].type == "input_text"
        await client.wait_message("assistant", "You typed hello.", "the reply to the typed message")
        await recorder.wait(
            lambda: len(client.raw("response.done")) >= 3, "the third response.done", STEP_TIMEOUT
        )
        assert [e["response"]["status"] for e in client.raw("response.done")] == [
            "cancelled",
            "completed",
            "completed",
        ]
        client.check_clean(caplog)
