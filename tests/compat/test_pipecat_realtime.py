"""pipecat's ``OpenAIRealtimeLLMService``, unmodified, in a pipeline against our server.

The pipeline is the one pipecat's realtime example builds (context aggregators
around the service, the bot greeting first on ``LLMRunFrame``), with only
``base_url`` and a dummy API key changed. pipecat sends nothing until
``session.created``, fails its receive loop on a server event its models reject,
and treats most ``error`` events as fatal; an observer records every frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from compat_servers import STORY, serving_story

from speech_to_speech.realtime.tools.preamble import PHRASES

pytest.importorskip("pipecat.services.openai.realtime.llm", reason="pipecat-ai[openai] is not installed")

from loguru import logger
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.frames.frames import (
    ErrorFrame,
    FunctionCallResultFrame,
    InputAudioRawFrame,
    LLMRunFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSTextFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.services.llm_service import FunctionCallParams
from pipecat.services.openai.realtime import events
from pipecat.services.openai.realtime.llm import OpenAIRealtimeLLMService
from pipecat.workers.runner import WorkerRunner

STEP_TIMEOUT = 20.0
RATE = 24000
GREETING = "Hello, I can hear you."


@pytest.fixture
def conversation(conversation: Any) -> Any:
    # pipecat's example has the bot speak first: one more scripted reply before the user's turns.
    # No speculative replies: they make the tool call arrive in the same instant as speech_stopped,
    # and pipecat 1.14 then sometimes records the tool result while it still thinks the user is
    # speaking, and never asks for the follow-up (its assistant aggregator does not push an owed
    # context when the user stops). That race is pipecat's; this test is about the protocol.
    # For the same reason the scripted STT takes 300 ms, as a real one does: on a loaded CI machine an
    # instant transcript still let the tool call overtake pipecat's handling of speech_stopped.
    return dataclasses.replace(conversation, greeting=GREETING,
                               server_settings=(("speculation_silence_ms", 0), ("scripted_stt_delay_ms", 300.0)))


class FrameLog(BaseObserver):
    """Every frame the realtime service pushes, in order, for the test to wait on."""

    def __init__(self, service: OpenAIRealtimeLLMService, recorder: Any) -> None:
        super().__init__()
        self._service = service
        self._recorder = recorder

    async def on_push_frame(self, data: FramePushed) -> None:
        if data.source is self._service or isinstance(data.frame, ErrorFrame):
            self._recorder.add(data.frame)


@dataclasses.dataclass
class PipecatSession:
    """A running pipeline around one realtime service: its worker, what it pushed and logged."""

    task: PipelineWorker
    run: asyncio.Task[Any]
    recorder: Any
    speech: Callable[[], Any]
    audio_chunks: Callable[[Any], Any]
    complaints: list[str]  # pipecat logs through loguru; warnings and worse land here

    def frames(self, kind: type) -> list[Any]:
        return [f for f in self.recorder.events if isinstance(f, kind)]

    def spoken_text(self) -> str:
        return "".join(f.text for f in self.frames(TTSTextFrame))

    async def speak(self, pause: float | None = 0.01) -> None:
        """The user's utterance as input audio, one chunk every ``pause`` seconds (``None``: at once)."""
        for piece in self.audio_chunks(self.speech()):
            await self.task.queue_frame(InputAudioRawFrame(audio=piece, sample_rate=RATE, num_channels=1))
            if pause is not None:
                await asyncio.sleep(pause)


@contextlib.asynccontextmanager
async def pipecat_session(
    llm: OpenAIRealtimeLLMService, context: LLMContext, recorder: Any, speech: Any, audio_chunks: Any
) -> AsyncIterator[PipecatSession]:
    """pipecat's example pipeline (context aggregators around ``llm``), run until the block ends."""
    aggregators = LLMContextAggregatorPair(context)
    task = PipelineWorker(
        Pipeline([aggregators.user(), llm, aggregators.assistant()]),
        params=PipelineParams(audio_in_sample_rate=RATE, audio_out_sample_rate=RATE),
        observers=[FrameLog(llm, recorder)],
        idle_timeout_secs=None,
    )
    complaints: list[str] = []
    sink = logger.add(lambda message: complaints.append(message.record["message"]), level="WARNING")
    try:
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(task)
        run = asyncio.create_task(runner.run())
        try:
            yield PipecatSession(task, run, recorder, speech, audio_chunks, complaints)
        finally:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task.cancel(), 10)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(run, 10)
            run.cancel()
    finally:
        logger.remove(sink)


async def test_pipecat_openai_realtime_spoken_turns_and_tool_call(
    scripted_server, conversation, speech, audio_chunks, recorder
) -> None:
    calls: list[dict[str, Any]] = []

    async def get_weather(params: FunctionCallParams) -> None:
        calls.append(dict(params.arguments))
        await params.result_callback(f"sunny, 21 degrees in {params.arguments['city']}")

    llm = OpenAIRealtimeLLMService(
        api_key="sk-local-not-checked",
        base_url=scripted_server.ws_url,
        settings=OpenAIRealtimeLLMService.Settings(
            model="speech-to-speech", system_instruction="You are a helpful voice assistant."
        ),
    )
    llm.register_function("get_weather", get_weather)
    weather = FunctionSchema(
        name="get_weather",
        description="The current weather in a city.",
        properties={"city": {"type": "string"}},
        required=["city"],
    )
    # As in the example: the bot is asked to open the conversation by an initial user message.
    context = LLMContext(
        messages=[{"role": "user", "content": "Say hello."}], tools=ToolsSchema(standard_tools=[weather])
    )
    async with pipecat_session(llm, context, recorder, speech, audio_chunks) as session:
        # The example's start: the bot greets once the session is set up.
        await session.task.queue_frames([LLMRunFrame()])
        await recorder.wait(lambda: GREETING in session.spoken_text(), "the greeting", STEP_TIMEOUT)

        # Turn 1: a spoken question, a spoken answer.
        await session.speak()
        await recorder.wait(
            lambda: [f.text for f in session.frames(TranscriptionFrame)] == [conversation.first_transcript],
            "the user's transcription",
            STEP_TIMEOUT,
        )
        await recorder.wait(
            lambda: conversation.first_reply in session.spoken_text(), "the spoken answer", STEP_TIMEOUT
        )
        assert sum(len(f.audio) for f in session.frames(TTSAudioRawFrame)) > RATE * 2 * 0.1

        # Turn 2: the reply is a tool call pipecat runs; its result goes back and the answer follows.
        await session.speak()
        await recorder.wait(lambda: session.frames(FunctionCallResultFrame), "the function call result", STEP_TIMEOUT)
        assert calls == [{"city": "Paris"}]
        await recorder.wait(
            lambda: conversation.tool_reply in session.spoken_text(), "the follow-up answer", STEP_TIMEOUT
        )
        # The reply that is only a tool call says a preamble first (docs/sessions.md, "No dead air").
        spoken = session.spoken_text()
        assert spoken.startswith(GREETING + conversation.first_reply) and spoken.endswith(conversation.tool_reply)
        preamble = spoken[len(GREETING + conversation.first_reply):-len(conversation.tool_reply)].strip()
        assert preamble in PHRASES["en"]

        assert [f.text for f in session.frames(TranscriptionFrame)] == conversation.transcripts
        errors = [f.error for f in session.frames(ErrorFrame)]
        assert errors == [], f"pipecat reported errors: {errors}"
        assert not session.run.done(), "the pipeline stopped"
        assert session.complaints == [], f"pipecat logged complaints: {session.complaints}"

        messages = context.get_messages()
        roles = [m.get("role") for m in messages]
        assert "tool" in roles, messages
        tool_message = next(m for m in messages if m.get("role") == "tool")
        assert "sunny, 21 degrees in Paris" in str(tool_message.get("content"))


async def test_pipecat_openai_realtime_locally_driven_turns(
    scripted_server, conversation, speech, audio_chunks, recorder
) -> None:
    """``turn_detection=False``: pipecat commits and asks for the reply when its own VAD ends the turn."""
    properties = events.SessionProperties(
        instructions="You are a helpful voice assistant.",
        audio=events.AudioConfiguration(input=events.AudioInput(turn_detection=False)),
    )
    llm = OpenAIRealtimeLLMService(
        api_key="sk-local-not-checked",
        base_url=scripted_server.ws_url,
        settings=OpenAIRealtimeLLMService.Settings(model="speech-to-speech", session_properties=properties),
    )
    items: list[tuple[str, str | None]] = []

    @llm.event_handler("on_conversation_item_created")
    async def _created(_llm: Any, _item_id: str, item: Any) -> None:
        items.append((item.type, item.role))

    async with pipecat_session(llm, LLMContext(messages=[]), recorder, speech, audio_chunks) as session:
        await session.task.queue_frames([LLMRunFrame()])
        await recorder.wait(lambda: GREETING in session.spoken_text(), "the greeting", STEP_TIMEOUT)
        # What pipecat's local VAD turn strategy emits around the user's speech.
        await session.task.queue_frame(UserStartedSpeakingFrame())
        await session.speak(pause=None)
        await session.task.queue_frame(UserStoppedSpeakingFrame())
        await recorder.wait(lambda: conversation.first_reply in session.spoken_text(), "the answer", STEP_TIMEOUT)
        await asyncio.sleep(1.0)
        assert session.spoken_text() == GREETING + conversation.first_reply
        # One response per response.create: the greeting's and the answer's, nothing on its own.
        assert items == [("message", "assistant"), ("message", "user"), ("message", "assistant")], items
        assert [f.text for f in session.frames(TranscriptionFrame)] == [conversation.first_transcript]
        errors = [f.error for f in session.frames(ErrorFrame)]
        assert errors == [], f"pipecat reported errors: {errors}"


@pytest.fixture
def story_server() -> Any:
    # After the barge-in pipecat re-sends its context and asks for a response itself, while the
    # user still speaks; the user's own turn then gets its automatic response: both say this.
    with serving_story(STORY, "Okay, I will stop.", "Okay, I will stop.") as server:
        yield server


async def test_pipecat_openai_realtime_barge_in(story_server, speech, audio_chunks, recorder) -> None:
    """Server VAD: speech over the answer; the server cancels it, pipecat interrupts and keeps going."""
    llm = OpenAIRealtimeLLMService(
        api_key="sk-local-not-checked",
        base_url=story_server.ws_url,
        settings=OpenAIRealtimeLLMService.Settings(model="speech-to-speech"),
    )
    async with pipecat_session(llm, LLMContext(messages=[]), recorder, speech, audio_chunks) as session:
        await session.speak()
        await recorder.wait(lambda: session.frames(TTSAudioRawFrame), "the story's first audio", STEP_TIMEOUT)
        await session.speak()
        await recorder.wait(
            lambda: "Okay, I will stop." in session.spoken_text(), "the reply to the barge-in", STEP_TIMEOUT
        )
        told = session.spoken_text().split("Okay, I will stop.")[0]
        assert STORY.startswith(told) and len(told) < len(STORY), f"the story was not cut: {told!r}"
        assert [f.text for f in session.frames(TranscriptionFrame)] == ["Tell me a story.", "Stop, please."]
        errors = [f.error for f in session.frames(ErrorFrame)]
        assert errors == [], f"pipecat reported errors: {errors}"
        assert not session.run.done(), "the pipeline stopped"
        assert session.complaints == [], f"pipecat logged complaints: {session.complaints}"
