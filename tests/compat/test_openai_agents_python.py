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
from typing import Any

from agents import function_tool
from agents.realtime import RealtimeAgent, RealtimeRunner

STEP_TIMEOUT = 20.0


def _text(item: Any) -> str:
    return "".join(
        (getattr(part, "transcript", None) or getattr(part, "text", None) or "") for part in item.content
    )


def _message(history: list[Any], role: str, text: str) -> Any:
    return next((i for i in history if i.type == "message" and i.role == role and _text(i) == text), None)


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

    agent = RealtimeAgent(
        name="Assistant",
        instructions="You are a helpful voice assistant. Answer briefly.",
        tools=[get_weather],
    )
    runner = RealtimeRunner(agent, config={"model_settings": {"model_name": "speech-to-speech"}})
    session = await asyncio.wait_for(
        runner.run(model_config={"url": scripted_server.ws_url, "api_key": "sk-local-not-checked"}),
        STEP_TIMEOUT,
    )

    def of(kind: str) -> list[Any]:
        return [e for e in recorder.events if e.type == kind]

    def raw(kind: str) -> list[dict[str, Any]]:
        return [
            e.data.data
            for e in of("raw_model_event")
            if e.data.type == "raw_server_event" and e.data.data.get("type") == kind
        ]

    def history() -> list[Any]:
        # The public view of the conversation: the latest history_updated event.
        updates = of("history_updated")
        return list(updates[-1].history) if updates else []

    async def speak() -> None:
        for piece in audio_chunks(speech()):
            await session.send_audio(piece)
            await asyncio.sleep(0.01)

    async def consume() -> None:
        async for event in session:
            recorder.add(event)

    async with session:
        consumer = asyncio.create_task(consume())
        try:
            await recorder.wait(lambda: raw("session.updated"), "session.updated", STEP_TIMEOUT)
            assert raw("session.created"), "no session.created"
            updated = raw("session.updated")[-1]["session"]
            assert [t["name"] for t in updated["tools"]] == ["get_weather"]
            assert updated["instructions"] == "You are a helpful voice assistant. Answer briefly."

            # Turn 1: a spoken question, a spoken answer.
            await speak()
            user = await recorder.wait(
                lambda: _message(history(), "user", conversation.first_transcript),
                "the user transcript in history",
                STEP_TIMEOUT,
            )
            assert user.content[0].type == "input_audio"
            await recorder.wait(lambda: of("agent_end"), "agent_end", STEP_TIMEOUT)
            answer = await recorder.wait(
                lambda: _message(history(), "assistant", conversation.first_reply),
                "the assistant transcript in history",
                STEP_TIMEOUT,
            )
            assert answer.status == "completed"
            audio = of("audio")
            assert audio, "no audio events"
            assert sum(len(e.audio.data) for e in audio) > 24000 * 2 * 0.1
            assert {e.item_id for e in audio} == {answer.item_id}
            assert raw("response.done")[-1]["response"]["status"] == "completed"

            # Turn 2: the reply is a tool call; the SDK runs it, sends the output and asks for a response.
            await speak()
            await recorder.wait(lambda: of("tool_end"), "tool_end", STEP_TIMEOUT)
            tool_end = of("tool_end")[0]
            assert tool_end.tool.name == "get_weather"
            assert json.loads(tool_end.arguments) == {"city": "Paris"}
            assert calls == ["Paris"]
            reply = await recorder.wait(
                lambda: _message(history(), "assistant", conversation.tool_reply),
                "the follow-up reply after the tool output",
                STEP_TIMEOUT,
            )
            await recorder.wait(
                lambda: len(raw("response.done")) >= 3, "the follow-up response.done", STEP_TIMEOUT
            )
            statuses = [e["response"]["status"] for e in raw("response.done")]
            assert statuses == ["completed", "completed", "completed"]

            items = history()
            question = _message(items, "user", conversation.tool_transcript)
            call = next(i for i in items if i.type == "function_call")
            assert call.name == "get_weather"
            assert call.output == "sunny, 21 degrees in Paris"
            order = [i.item_id for i in items]
            assert order.index(question.item_id) < order.index(call.item_id) < order.index(reply.item_id)

            errors = [e.error for e in of("error")]
            assert errors == [], f"the SDK reported errors: {errors}"
            complaints = [
                r.getMessage()
                for r in caplog.records
                if r.name.startswith("openai.agents") and r.levelno >= logging.WARNING
            ]
            assert complaints == [], f"the SDK logged complaints: {complaints}"
        finally:
            consumer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await consumer
