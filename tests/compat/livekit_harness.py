"""Driving livekit-plugins-openai's ``RealtimeSession`` the way LiveKit's AgentSession does.

Shared by the stock-plugin tests and the ``demo/livekit`` example's tests: a
session opened on a given ``RealtimeModel``, the raw server events, errors and
generations it reported, and microphone-paced audio in.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from livekit import rtc
from livekit.agents import llm
from livekit.plugins import openai as livekit_openai

STEP_TIMEOUT = 20.0
RATE = 24000


def stock_model(server: Any, **model_options: Any) -> livekit_openai.realtime.RealtimeModel:
    """The plugin's ``RealtimeModel`` on ``server``: only ``base_url`` and a dummy API key differ from OpenAI."""
    return livekit_openai.realtime.RealtimeModel(
        model="speech-to-speech",
        base_url=server.http_url + "/v1",
        api_key="sk-local-not-checked",
        **model_options,
    )


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
async def livekit_client(model: livekit_openai.realtime.RealtimeModel, recorder: Any) -> AsyncIterator[Client]:
    """A session of ``model``, its events recorded; the session and the model closed (quietly) on exit."""
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
