"""The paced microphone: chunk sizes, silence between clips, and when each marked sample left."""

from __future__ import annotations

import asyncio
import base64
import time

import numpy as np
import pytest

from speech_to_speech.bench.audio import Speech
from speech_to_speech.bench.mic import PacedMic

RATE = 1000  # tiny: 10 ms chunks of 10 samples


class FakeClient:
    def __init__(self) -> None:
        self.chunks: list[np.ndarray] = []
        self.sent_at: list[float] = []

    async def send(self, event_type: str, **fields: str) -> str:
        assert event_type == "input_audio_buffer.append"
        self.chunks.append(np.frombuffer(base64.b64decode(fields["audio"]), dtype="<i2"))
        self.sent_at.append(time.monotonic())
        return "evt"


def speech(samples: list[float], start: int, end: int) -> Speech:
    return Speech("clip", "", np.array(samples, dtype=np.float32), RATE, start, end)


async def test_clips_are_sent_in_whole_chunks_then_silence_and_marks_resolve_on_their_chunk() -> None:
    client = FakeClient()
    clip = speech([0.0] * 5 + [0.5] * 20 + [0.0] * 3, start=5, end=25)  # voiced 5..24, 28 samples
    async with PacedMic(client, RATE, chunk_ms=10) as mic:  # type: ignore[arg-type]
        said = mic.say(clip, {"middle": 14})
        await asyncio.wait_for(said.finished.wait(), 5)
        while len(client.chunks) < 4:
            await asyncio.sleep(0.01)
    assert all(len(chunk) == 10 for chunk in client.chunks)
    stream = np.concatenate(client.chunks)
    assert np.count_nonzero(stream[:28]) == 20 and not np.any(stream[28:])  # padded and followed by silence
    # Each mark's time lies between the send of the chunk holding it and the next send.
    for name, chunk in (("first_voiced", 0), ("middle", 1), ("last_voiced", 2), ("finished", 2)):
        assert client.sent_at[chunk] <= said.sent[name] <= client.sent_at[chunk + 1], name
    assert said.first_voiced_sent == said.sent["first_voiced"]
    assert said.last_voiced_sent == said.sent["last_voiced"]


async def test_a_second_clip_queues_behind_the_first() -> None:
    client = FakeClient()
    first = speech([0.5] * 10, 0, 10)
    second = speech([0.25] * 10, 0, 10)
    async with PacedMic(client, RATE, chunk_ms=10) as mic:  # type: ignore[arg-type]
        one, two = mic.say(first), mic.say(second)
        await asyncio.wait_for(two.finished.wait(), 5)
        assert not mic.speaking
    assert one.sent["finished"] <= two.sent["first_voiced"]
    assert client.chunks[0][0] > client.chunks[1][0] > 0


async def test_a_clip_at_another_rate_is_refused() -> None:
    async with PacedMic(FakeClient(), RATE, chunk_ms=10) as mic:  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="16000"):
            mic.say(Speech("x", "", np.zeros(10, np.float32), 16000, 0, 10))
