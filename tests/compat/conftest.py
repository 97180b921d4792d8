"""Shared pieces of the stock-client compatibility tests.

Every client holds the same scripted conversation: a plain spoken turn, then a
spoken turn whose reply is a tool call that the client runs itself, answered by
a follow-up reply after the client sends the tool output.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from compat_servers import scripted

from speech_to_speech.testing.scripted import tone
from speech_to_speech.testing.server import RunningServer


@dataclass(frozen=True)
class Conversation:
    first_transcript: str = "Hello, who are you?"
    first_reply: str = "I am a local voice agent."
    tool_transcript: str = "What is the weather in Paris?"
    tool_name: str = "get_weather"
    tool_arguments: str = json.dumps({"city": "Paris"})
    tool_reply: str = "It is sunny in Paris."
    # A reply spoken before the user's first turn, for clients whose bot speaks first.
    greeting: str | None = None
    # Turns a client's test adds after the shared ones (barge-in, cancellation, ...).
    extra_transcripts: tuple[str, ...] = ()
    extra_replies: tuple[str, ...] = ()
    # The scripted LLM's delay per token: long replies stay in progress long enough to interrupt.
    token_delay_ms: float = 5.0
    # Server settings of a client's test beyond the scripts.
    server_settings: tuple[tuple[str, Any], ...] = ()

    @property
    def transcripts(self) -> list[str]:
        return [self.first_transcript, self.tool_transcript, *self.extra_transcripts]

    @property
    def replies(self) -> list[str]:
        opening = [self.greeting] if self.greeting else []
        return [
            *opening,
            self.first_reply,
            f"<tool_call>{self.tool_name} {self.tool_arguments}</tool_call>",
            self.tool_reply,
            *self.extra_replies,
        ]


@pytest.fixture
def conversation() -> Conversation:
    return Conversation()


@pytest.fixture
def scripted_server(conversation: Conversation) -> Iterator[RunningServer]:
    with scripted(conversation.transcripts, conversation.replies, conversation.token_delay_ms,
                  **dict(conversation.server_settings)) as server:
        yield server


def spoken_turn_pcm16(rate: int = 24000, tone_seconds: float = 1.0, silence_seconds: float = 1.2) -> bytes:
    """PCM16 little-endian mono: a loud tone (speech to the scripted VAD), then silence that ends the turn."""
    audio = np.concatenate(
        [tone(tone_seconds, rate), np.zeros(int(silence_seconds * rate), dtype=np.float32)]
    )
    return (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()


def chunks(pcm: bytes, rate: int = 24000, ms: int = 40) -> list[bytes]:
    size = rate * ms // 1000 * 2
    return [pcm[start : start + size] for start in range(0, len(pcm), size)]


@pytest.fixture
def speech() -> Callable[..., bytes]:
    return spoken_turn_pcm16


@pytest.fixture
def audio_chunks() -> Callable[..., list[bytes]]:
    return chunks


class Recorder:
    """Events a client hands to the test, and a bounded wait for a condition over them."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self._changed = asyncio.Event()

    def add(self, event: Any) -> None:
        self.events.append(event)
        self._changed.set()

    async def wait(self, check: Callable[[], Any], label: str, timeout: float = 20.0) -> Any:
        """``check()`` once it is truthy (re-checked on every recorded event); fail after ``timeout`` s."""

        async def until() -> Any:
            while not (value := check()):
                self._changed.clear()
                await self._changed.wait()
            return value

        try:
            return await asyncio.wait_for(until(), timeout)
        except TimeoutError:
            kinds = [getattr(e, "type", type(e).__name__) for e in self.events[-30:]]
            pytest.fail(f"timed out after {timeout} s waiting for {label}; last events: {kinds}")


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()
