"""File mode: a WAV streamed as if spoken into a microphone, and a recorder for the replies."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np

from speech_to_speech.audio.rates import WIRE_RATE
from speech_to_speech.audio.wav import read_wav, write_wav
from speech_to_speech.client.playback import Playback, Samples

RECORD_BLOCK_S = 0.02
GAP_S = 0.5  # silence between two replies in the recording


class Pacer:
    """Sleeps so that successive steps of ``seconds`` track the wall clock (no drift, no burst after a pause)."""

    def __init__(self) -> None:
        self._next: float | None = None

    async def step(self, seconds: float) -> None:
        now = time.monotonic()
        if self._next is None or self._next < now - 0.25:
            self._next = now  # first step, or we were paused: restart the schedule
        self._next += seconds
        await asyncio.sleep(max(0.0, self._next - now))


class WavSource:
    """The file in ``chunk_size`` pieces in real time, then silence until the client stops reading."""

    live = False  # while the mic is blocked the file waits instead of skipping ahead

    def __init__(self, path: str | Path, send_rate: int, chunk_size: int, trailing_silence_ms: int) -> None:
        self.samples, _ = read_wav(path, send_rate)
        self.send_rate = send_rate
        self.chunk_size = chunk_size
        self.trailing_silence = send_rate * trailing_silence_ms // 1000
        self.finished = asyncio.Event()  # the file and its trailing silence were sent

    async def chunks(self) -> AsyncIterator[Samples]:
        pacer = Pacer()
        seconds = self.chunk_size / self.send_rate
        for start in range(0, len(self.samples), self.chunk_size):
            chunk = self.samples[start : start + self.chunk_size]
            await pacer.step(len(chunk) / self.send_rate)
            yield chunk
        silence = np.zeros(self.chunk_size, dtype=np.float32)
        sent = 0
        while True:  # keep the line open (as a quiet microphone would) while replies finish
            await pacer.step(seconds)
            yield silence
            sent += self.chunk_size
            if sent >= self.trailing_silence:
                self.finished.set()


class WavRecorder:
    """A real-time clock that drains the Playback buffer, keeping what the assistant said.

    Only the replies are kept (not the silence while the user talks), with a short gap between two.
    """

    def __init__(self, path: str | Path, rate: int = WIRE_RATE) -> None:
        self.path = Path(path)
        self.rate = rate
        self._pieces: list[Samples] = []
        self._task: asyncio.Task[None] | None = None

    def start(self, playback: Playback) -> None:
        self._task = asyncio.create_task(self._run(playback), name="wav-recorder")

    async def _run(self, playback: Playback) -> None:
        pacer = Pacer()
        block = int(self.rate * RECORD_BLOCK_S)
        previous: str | None = None
        while True:
            await pacer.step(RECORD_BLOCK_S)
            audio, filled = playback.read(block)
            if filled:
                if previous is not None and playback.last_response_id != previous:
                    self._pieces.append(np.zeros(int(self.rate * GAP_S), dtype=np.float32))
                previous = playback.last_response_id
                self._pieces.append(audio[:filled])

    @property
    def seconds(self) -> float:
        return sum(len(p) for p in self._pieces) / self.rate

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        audio = np.concatenate(self._pieces) if self._pieces else np.zeros(0, dtype=np.float32)
        write_wav(self.path, audio, self.rate)
