"""A client whose microphone hears its speaker loudly: a user who talks over the answer is heard, words and all.

Real VAD, turn detector, STT and TTS (the LLM is scripted, for a long
answer); the rig plays the answer into the microphone through a simulated
room whose echo is 6 dB louder than the user, and the server cancels it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from speech_to_speech.bench import room_audio
from speech_to_speech.bench.echo_bargein import echo_gain, words
from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import ECHO_CANCELLATION_EXTENSION
from speech_to_speech.testing.echo_rig import EchoRun, Interruption, speak_beside_speaker
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.room import Room
from speech_to_speech.testing.server import RunningServer, running_server

pytestmark = pytest.mark.real_models

RATE = room_audio.RATE
USER_DB = -26.0  # the user's voiced level at the microphone; the echo's is ECHO_DB over it
ECHO_DB = 6.0
DELAY_MS = 150
ANSWER = ("Once upon a time a lighthouse keeper lived alone on a rocky island. Every night he climbed the "
          "stairs to light the lamp, and every morning he fed the seagulls that waited by his door. One winter "
          "a storm broke the lamp, and he had to keep a fire burning on the rocks until the ships were safe.")
INTERRUPTION = "Hold on a second, what time is it?"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    # each test's story, then a short reply to the interruption (which the first test waits for)
    settings = ServerSettings(llm="scripted", scripted_replies=[ANSWER, "It is noon."] * 2, log_level="warning")
    with running_server(settings) as running:
        yield running


@pytest.fixture(scope="module")
def loud_room() -> Room:
    return Room(delay_ms=DELAY_MS, gain=echo_gain(USER_DB, ECHO_DB, DELAY_MS, RATE), rate=RATE)


def _said(text: str) -> tuple[np.ndarray, int]:
    clip = room_audio.spoken((text,))[1]  # the shifted voice: not the assistant's own
    return room_audio.at_level(clip.samples, USER_DB), clip.start


async def _over_the_answer(server: RunningServer, room: Room, interruption: Interruption | None) -> EchoRun:
    question, _ = _said("Tell me a long story about a lighthouse.")
    async with RealtimeTestClient.connect(server.ws_url, timeout=60) as client:
        await client.wait_for("session.created")
        await client.update_session({"extensions": [ECHO_CANCELLATION_EXTENSION]})
        return await speak_beside_speaker(client, question, RATE, room, listen_s=40.0, interruption=interruption)


async def test_a_user_talking_over_a_loud_echo_is_heard_and_transcribed(server: RunningServer,
                                                                        loud_room: Room) -> None:
    samples, voiced = _said(INTERRUPTION)
    run = await _over_the_answer(server, loud_room, Interruption(1500.0, samples, voiced))
    # (the scripted answer is all sent by then: the client's playback is what stops, not the response)
    assert len(run.of_type("input_audio_buffer.speech_started", after_answer=True)) == 1
    heard = set(words(" ".join(run.user_transcripts[1:])))
    said = words(INTERRUPTION)
    assert sum(word in heard for word in said) >= len(said) - 2, run.user_transcripts


async def test_a_loud_echo_alone_starts_no_turn(server: RunningServer, loud_room: Room) -> None:
    run = await _over_the_answer(server, loud_room, None)
    assert run.of_type("input_audio_buffer.speech_started", after_answer=True) == []
    assert run.response_statuses == ["completed"]
    assert len(run.user_transcripts) == 1
