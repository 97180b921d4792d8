"""Each queue of a unit carries only what its type says (pipeline/queue_items.py), over real sessions.

A server with scripted backends is started with every queue of its unit
checked at ``put``: a session speaks, calls a tool, is interrupted, commits
and clears its input, and closes. Anything put on a queue outside its type is
recorded, with the queue's name.
"""

from __future__ import annotations

import typing
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from speech_to_speech.pipeline import messages
from speech_to_speech.pipeline.messages.control import SessionEnd
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    AssistantToolCallPart,
    GenerateResponseRequest,
    ResponseDone,
)
from speech_to_speech.pipeline.messages.input_audio import (
    AudioChunk,
    ClearInput,
    CommitInput,
    SpeechStarted,
    SpeechStopped,
    Utterance,
)
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TranscriptText, TTSInput
from speech_to_speech.pipeline.messages.transcription import Transcript, TranscriptionCompleted
from speech_to_speech.testing.client_audio import silence, spoken_turn
from speech_to_speech.testing.engine import wait_until
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.units import unit as unit_module

from .conftest import ServerFactory

RATE = 24000
LONG_REPLY = " ".join(f"Clause number {n} goes on, and on." for n in range(1, 11))
TOOLS = [{"type": "function", "name": "get_time", "parameters": {"type": "object"}}]


@dataclass
class Seen:
    types: dict[str, set[type]]
    wrong: list[tuple[str, str]]


def allowed_types() -> dict[str, tuple[type, ...]]:
    """Each queue's name and the message classes its annotation admits."""
    hints = typing.get_type_hints(unit_module.PipelineQueues)
    return {name: typing.get_args(typing.get_args(hint)[0]) for name, hint in hints.items()}


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[Seen]:
    record = Seen(defaultdict(set), [])
    allowed = allowed_types()

    @dataclass
    class CheckedQueues(unit_module.PipelineQueues):
        def __post_init__(self) -> None:
            for name, kinds in allowed.items():
                target = getattr(self, name)
                target.put = _checked(target.put, name, kinds, record)

    monkeypatch.setattr(unit_module, "PipelineQueues", CheckedQueues)
    yield record


def _checked(put: Any, name: str, kinds: tuple[type, ...], record: Seen) -> Any:
    def checked_put(item: Any, block: bool = True, timeout: float | None = None) -> None:
        record.types[name].add(type(item))
        if not isinstance(item, kinds):
            record.wrong.append((name, type(item).__name__))
        put(item, block, timeout)

    return checked_put


async def test_every_queue_carries_only_its_type(make_server: ServerFactory, seen: Seen) -> None:
    server = make_server(scripted_transcripts=["What time is it?", "Tell me a story.", "Stop.", "Thanks."],
                         scripted_replies=["<tool_call>get_time {}</tool_call>", LONG_REPLY, "Stopped.", "Bye."],
                         scripted_token_delay_ms=15.0, scripted_tts_ms_per_char=20.0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"tools": TOOLS})
        await client.append_audio(spoken_turn(RATE), RATE)  # answered with a tool call
        await client.wait_for(lambda e: e["type"] == "response.done")
        await client.append_audio(spoken_turn(RATE), RATE)  # a long answer, then speech over it
        await client.wait_for("response.output_audio.delta")
        await client.append_audio(spoken_turn(RATE), RATE)
        await client.wait_for(lambda e: e["type"] == "response.done" and e["response"]["status"] == "cancelled")
        await client.wait_for(lambda e: e["type"] == "response.done" and e["response"]["status"] == "completed")
        await client.append_audio(silence(0.2, RATE), RATE)
        await client.send("input_audio_buffer.clear")
        await client.wait_for("input_audio_buffer.cleared")
        await client.append_audio(spoken_turn(RATE, silence_s=0.0), RATE)
        await client.send("input_audio_buffer.commit")
        await client.wait_for("input_audio_buffer.committed")
    wait_until(lambda: all(slot.state == "idle" for slot in server.pool.status()), what="the unit drained")

    assert seen.wrong == []
    expected = {
        "vad_input": {AudioChunk, ClearInput, CommitInput, SessionEnd},
        "utterances": {Utterance, SessionEnd},
        "transcripts": {Transcript, SessionEnd},
        "stage_events": {SpeechStarted, SpeechStopped, TranscriptionCompleted,
                         SessionEnd},
        "llm_requests": {GenerateResponseRequest, SessionEnd},
        "llm_output": {AssistantTextPart, AssistantToolCallPart, ResponseDone},
        "tts_input": {TTSInput, AssistantToolCallPart, ResponseDone},
        "response_output": {AudioOutput, TranscriptText, AssistantToolCallPart,
                            ResponseDone, SessionEnd},
    }
    for name, kinds in expected.items():
        assert kinds <= seen.types[name], (name, sorted(k.__name__ for k in kinds - seen.types[name]))


def test_each_queue_has_a_type_of_message_classes() -> None:
    allowed = allowed_types()
    assert set(allowed) == {"vad_input", "utterances", "transcripts", "stage_events", "llm_requests", "llm_output",
                            "tts_input", "tts_output", "response_output"}
    for name, kinds in allowed.items():
        assert kinds and all(isinstance(k, type) and k.__module__.startswith(f"{messages.__name__}.")
                             for k in kinds), name
