"""The LiveKit Agents example in ``demo/livekit``, against the real server, with no LiveKit server.

The example's own functions build what the tests drive: its ``RealtimeModel``
(stock livekit-plugins-openai, ``base_url`` on our server), its ``Agent`` with
the ``get_local_time`` tool, and its ``AgentSession``. LiveKit's part that is
left out is the room: audio goes in and comes out of the session directly,
where a LiveKit server would carry it to and from a participant.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from compat_servers import STORY, scripted

from speech_to_speech.realtime.tools.preamble import PHRASES

pytest.importorskip("livekit.plugins.openai", reason="livekit-plugins-openai is not installed")

from livekit import rtc
from livekit.agents import AgentSession, llm
from livekit.agents.voice import io
from livekit.plugins.openai.realtime.realtime_model import process_base_url
from livekit_harness import RATE, STEP_TIMEOUT, livekit_client

EXAMPLE = Path(__file__).resolve().parents[2] / "demo" / "livekit" / "agent.py"
TIME_OF_DAY = re.compile(r"\b\d{2}:\d{2}\b")
GREETING = "Hello! What can I do for you?"  # the scripted LLM's answer to the worker's greeting request


@pytest.fixture(scope="module")
def example() -> Iterator[ModuleType]:
    """``demo/livekit/agent.py``, imported from its path (``demo`` is not a package)."""
    name = "speech_to_speech_livekit_example"
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)


@pytest.fixture
def conversation(conversation: Any) -> Any:
    """The worker greets first; the tool turn asks for the time, which the example's tool answers."""
    return dataclasses.replace(
        conversation,
        greeting=GREETING,
        tool_transcript="What time is it in Paris?",
        tool_name="get_local_time",
        tool_arguments=json.dumps({"timezone": "Europe/Paris"}),
        tool_reply="That is the time in Paris.",
    )


def plugin_complaints(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("livekit") and r.levelno >= logging.WARNING]


# ---------------------------------------------------------------- the worker without a server


def test_the_example_builds_its_agent_and_model_without_a_livekit_server(example, monkeypatch) -> None:
    agent = example.build_agent()
    assert agent.instructions == example.INSTRUCTIONS
    assert [tool.info.name for tool in agent.tools] == ["get_local_time"]
    assert example.server._entrypoint_fnc is example.entrypoint  # what `agent.py dev` runs per job

    monkeypatch.delenv("S2S_URL", raising=False)
    model = example.build_realtime_model()
    assert model._opts.base_url == "http://127.0.0.1:8765/v1"
    # The WebSocket the plugin opens: our server's Realtime endpoint.
    assert process_base_url(model._opts.base_url, model.model) == (
        "ws://127.0.0.1:8765/v1/realtime?model=speech-to-speech"
    )
    assert model._opts.turn_detection is not None and model._opts.turn_detection.type == "semantic_vad"
    assert model.capabilities.turn_detection and model.capabilities.user_transcription

    monkeypatch.setenv("S2S_URL", "http://voice.example:9000/v1")
    monkeypatch.setenv("S2S_VOICE", "af_bella")
    model = example.build_realtime_model()
    assert model._opts.base_url == "http://voice.example:9000/v1"
    assert model._opts.voice == "af_bella"


async def test_the_example_tool_tells_the_local_time(example) -> None:
    assert TIME_OF_DAY.search(await example.get_local_time())
    paris = await example.get_local_time("Europe/Paris")
    assert TIME_OF_DAY.search(paris) and ("CET" in paris or "CEST" in paris)
    assert "Unknown time zone" in await example.get_local_time("Atlantis/Capital")


def test_the_example_runs_as_the_livekit_agents_cli() -> None:
    """``python demo/livekit/agent.py`` is the livekit-agents CLI (``dev``, ``start``, ``console``)."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    done = subprocess.run([sys.executable, str(EXAMPLE), "--help"], capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert {"dev", "start", "console"} <= set(re.findall(r"\b(dev|start|console)\b", done.stdout))


# ---------------------------------------------------------------- its RealtimeSession on the server


async def test_the_example_model_declares_its_tool_greets_answers_and_calls_the_tool(
    example, scripted_server, conversation, speech, audio_chunks, recorder, caplog
) -> None:
    caplog.set_level(logging.WARNING, logger="livekit")
    agent = example.build_agent()
    model = example.build_realtime_model(scripted_server.http_url + "/v1")
    async with livekit_client(model, recorder) as client:
        session, of = client.session, client.of
        # What AgentSession does first with an agent: its instructions and tools go to the server.
        await asyncio.wait_for(session.update_instructions(agent.instructions), STEP_TIMEOUT)
        await asyncio.wait_for(session.update_tools(agent.tools), STEP_TIMEOUT)
        updated = await recorder.wait(
            lambda: [e["session"] for e in of("session.updated") if e["session"].get("tools")],
            "session.updated with the example's tool",
            STEP_TIMEOUT,
        )
        declared = updated[-1]
        assert [tool["name"] for tool in declared["tools"]] == ["get_local_time"]
        assert declared["tools"][0]["parameters"]["properties"]["timezone"]["type"] == "string"
        assert declared["instructions"] == example.INSTRUCTIONS
        # The example asks for semantic_vad; this scripted server has no turn detector and says so.
        assert declared["audio"]["input"]["turn_detection"]["type"] == "server_vad"
        assert declared["audio"]["output"]["voice"] == example.DEFAULT_VOICE
        # ...and they are what the pipeline's LLM now reads.
        configs = [unit.config.current for unit in scripted_server.pool.units()]
        assert any(
            [tool["name"] for tool in c.tools] == ["get_local_time"] and c.instructions == example.INSTRUCTIONS
            for c in configs
        ), configs

        # The worker's greeting: a reply nobody spoke to, asked for with generate_reply().
        greeted = await asyncio.wait_for(session.generate_reply(instructions=example.GREETING), STEP_TIMEOUT)
        assert greeted.user_initiated, "response.created did not carry generate_reply()'s metadata"
        greeting = await client.generation(0)
        assert greeting.event is greeted
        assert greeting.texts == [conversation.greeting]
        assert greeting.audio_samples > 0

        # A spoken turn (a tone, then silence): the server's VAD ends it and the server answers.
        await client.speak(audio_chunks(speech()))
        answer = await client.generation(1)
        assert answer.texts == [conversation.first_reply]
        assert answer.audio_samples > RATE * 0.1
        assert not answer.event.user_initiated

        # A spoken turn whose answer is a call of the example's tool, which runs here, in the worker.
        await client.speak(audio_chunks(speech()))
        called = await client.generation(2)
        assert [(c.name, json.loads(c.arguments)) for c in called.calls] == [
            ("get_local_time", {"timezone": "Europe/Paris"})
        ]
        call = called.calls[0]
        output = await example.get_local_time(**json.loads(call.arguments))
        chat_ctx = session.chat_ctx.copy()
        chat_ctx.items.append(
            llm.FunctionCallOutput(call_id=call.call_id, name=call.name, output=output, is_error=False)
        )
        await asyncio.wait_for(session.update_chat_ctx(chat_ctx), STEP_TIMEOUT)
        asked = await asyncio.wait_for(session.generate_reply(), STEP_TIMEOUT)
        follow_up = await client.generation(3)
        assert follow_up.event is asked
        assert follow_up.texts == [conversation.tool_reply]
        assert follow_up.audio_samples > 0

        await recorder.wait(lambda: len(of("response.done")) >= 4, "four response.done", STEP_TIMEOUT)
        assert [e["response"]["status"] for e in of("response.done")] == ["completed"] * 4
        outputs = [
            e["item"] for e in of("conversation.item.added") if e["item"]["type"] == "function_call_output"
        ]
        assert [(o["call_id"], o["output"]) for o in outputs] == [(call.call_id, output)]
        completed = of("conversation.item.input_audio_transcription.completed")
        assert [e["transcript"] for e in completed] == conversation.transcripts
        assert client.errors == [], f"the plugin reported errors: {client.errors}"
        assert plugin_complaints(caplog) == []


# ---------------------------------------------------------------- its AgentSession on the server


class Microphone(io.AudioInput):
    """Frames the test says, handed to the AgentSession as a room's audio track would be."""

    def __init__(self) -> None:
        super().__init__(label="test microphone")
        self._frames: asyncio.Queue[rtc.AudioFrame] = asyncio.Queue()

    async def __anext__(self) -> rtc.AudioFrame:
        return await self._frames.get()

    async def say(self, pieces: Iterable[bytes]) -> None:
        for piece in pieces:
            self._frames.put_nowait(rtc.AudioFrame(piece, RATE, 1, len(piece) // 2))
            await asyncio.sleep(0.01)


class Speaker(io.AudioOutput):
    """Plays the agent's audio in real time, as a room's audio track does, and reports each segment.

    Frames are taken as fast as they come; a segment counts as played once its audio's duration
    has passed since its first frame. Without that wait a segment would end the moment its
    generation did, and a barge-in that reaches the framework a moment after the server's
    cancelled ``response.done`` would find nothing left playing to interrupt, which a listener
    with a real speaker never sees. It says it can pause, as a room's track can (else AgentSession
    warns that ``resume_false_interruption`` is off); pausing is a no-op here.
    """

    def __init__(self) -> None:
        super().__init__(label="test speaker", capabilities=io.AudioOutputCapabilities(pause=True))
        self.samples = 0
        self.segments = 0
        self._queued = 0.0  # seconds of audio in the segment now playing
        self._started: float | None = None  # monotonic time of the segment's first frame
        self._end_of_segment: asyncio.TimerHandle | None = None

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        if self._started is None:
            self._started = time.monotonic()
            self.on_playback_started(created_at=time.time())
        self.samples += frame.samples_per_channel
        self._queued += frame.duration

    def flush(self) -> None:
        super().flush()
        if self._started is not None and self._end_of_segment is None:
            left = max(0.0, self._started + self._queued - time.monotonic())
            self._end_of_segment = asyncio.get_running_loop().call_later(left, self._finish, False)

    def clear_buffer(self) -> None:
        self._finish(interrupted=True)

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def _finish(self, interrupted: bool) -> None:
        if self._end_of_segment is not None:
            self._end_of_segment.cancel()
            self._end_of_segment = None
        if self._started is not None:
            played = min(self._queued, time.monotonic() - self._started)
            self._started, self._queued = None, 0.0
            self.segments += 1
            self.on_playback_finished(playback_position=played, interrupted=interrupted)


@dataclasses.dataclass
class ExampleSession:
    """The example's AgentSession on a server, its audio through a test microphone and speaker."""

    session: AgentSession[None]
    microphone: Microphone
    speaker: Speaker
    errors: list[Any]

    def assistant_messages(self) -> list[llm.ChatMessage]:
        return [i for i in self.session.history.items if i.type == "message" and i.role == "assistant"]

    def assistant_texts(self) -> list[str]:
        return [m.text_content or "" for m in self.assistant_messages()]

    def user_texts(self) -> list[str]:
        return [i.text_content or "" for i in self.session.history.items if i.type == "message" and i.role == "user"]


@contextlib.asynccontextmanager
async def example_session(
    example: ModuleType, server: Any, recorder: Any, **session_options: Any
) -> AsyncIterator[ExampleSession]:
    """``example.start_session`` (the worker's start, greeting included) with no room; closed on exit."""
    session = example.build_session(server.http_url + "/v1", **session_options)
    running = ExampleSession(session, Microphone(), Speaker(), [])
    session.input.audio, session.output.audio = running.microphone, running.speaker
    session.on("error", running.errors.append)
    for kind in ("conversation_item_added", "function_tools_executed", "agent_state_changed"):
        session.on(kind, recorder.add)
    try:
        await asyncio.wait_for(example.start_session(session), STEP_TIMEOUT)  # returns once the greeting played
        yield running
    finally:
        await asyncio.wait_for(session.aclose(), 10)
        await asyncio.wait_for(session.llm.aclose(), 10)  # its HTTP client: a job's, in a worker


async def test_the_example_agent_session_greets_answers_and_runs_its_tool(
    example, scripted_server, conversation, speech, audio_chunks, recorder, caplog
) -> None:
    """The worker's own session, minus the room: the framework runs the tool and asks for the follow-up."""
    caplog.set_level(logging.WARNING, logger="livekit")
    async with example_session(example, scripted_server, recorder) as running:
        assert running.assistant_texts() == [conversation.greeting]

        await running.microphone.say(audio_chunks(speech()))
        await recorder.wait(lambda: len(running.assistant_texts()) >= 2, "the answer to the first turn")

        await running.microphone.say(audio_chunks(speech()))
        executed = await recorder.wait(
            lambda: [e for e in recorder.events if getattr(e, "type", "") == "function_tools_executed"],
            "the example's tool run by the AgentSession",
        )
        await recorder.wait(lambda: len(running.assistant_texts()) >= 4, "the answer after the tool")

        # The reply that is only a tool call says a preamble first (docs/sessions.md, "No dead air").
        greeting, first, preamble, answer = running.assistant_texts()
        assert [greeting, first, answer] == [conversation.greeting, conversation.first_reply, conversation.tool_reply]
        assert preamble.strip() in PHRASES["en"]
        assert running.user_texts() == [conversation.first_transcript, conversation.tool_transcript]
        [ran] = executed
        assert [(c.name, json.loads(c.arguments)) for c in ran.function_calls] == [
            ("get_local_time", {"timezone": "Europe/Paris"})
        ]
        [output] = ran.function_call_outputs
        assert output is not None and not output.is_error
        assert TIME_OF_DAY.search(output.output), output.output  # the real tool ran, in the worker
        assert running.speaker.segments >= 3 and running.speaker.samples > RATE * 0.3
        assert running.errors == [], f"the session reported errors: {running.errors}"
        assert plugin_complaints(caplog) == []


@pytest.fixture
def story_server() -> Iterator[Any]:
    with scripted(["Tell me a story.", "Stop, please."], [GREETING, STORY, "Okay, I will stop."],
                  token_delay_ms=30.0) as server:
        yield server


async def test_the_example_agent_session_stops_its_answer_when_talked_over(
    example, story_server, speech, audio_chunks, recorder, caplog
) -> None:
    caplog.set_level(logging.WARNING, logger="livekit")

    def speaking() -> int:
        return sum(1 for e in recorder.events if getattr(e, "type", "") == "agent_state_changed"
                   and e.new_state == "speaking")

    # LiveKit mutes the user (sends silence) for the first 3 s of wall-clock time after the
    # agent first speaks, until a room's echo canceller settles; there is no echo here.
    async with example_session(example, story_server, recorder, aec_warmup_duration=None) as running:
        await running.microphone.say(audio_chunks(speech()))  # "Tell me a story."
        await recorder.wait(lambda: speaking() >= 2, "the story's first audio at the speaker")
        await running.microphone.say(audio_chunks(speech()))  # "Stop, please." over the story
        await recorder.wait(lambda: len(running.assistant_texts()) >= 3, "the answer to the interruption")

        greeting, story, stop = running.assistant_messages()
        assert (greeting.text_content, stop.text_content) == (GREETING, "Okay, I will stop.")
        told = story.text_content or ""
        assert story.interrupted and told and STORY.startswith(told) and len(told) < len(STORY)
        assert not greeting.interrupted and not stop.interrupted
        assert running.user_texts() == ["Tell me a story.", "Stop, please."]
        assert running.errors == [], f"the session reported errors: {running.errors}"
        assert plugin_complaints(caplog) == []
