"""A microphone in real time over the Realtime protocol: what every benchmark streams through.

``PacedMic`` sends one chunk every ``chunk_ms`` on an absolute schedule (a late
chunk goes out at once, as a real capture buffer would), silence whenever
nothing is being said, and records when the chunk holding a clip's first and
last voiced sample left: the benchmarks' "start of speech" and "end of speech".
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from speech_to_speech.bench.audio import Speech
from speech_to_speech.bench.events import Turn, response_id, turn
from speech_to_speech.protocol import TIMINGS_EXTENSION
from speech_to_speech.testing.client_audio import encode_audio
from speech_to_speech.testing.realtime_client import RealtimeTestClient

FINISHED = "finished"  # the mark of a clip's last sample


@dataclass
class Said:
    """One clip handed to the mic, and the monotonic time each marked sample was sent (once it was)."""

    clip: Speech
    sent: dict[str, float] = field(default_factory=dict)
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def first_voiced_sent(self) -> float | None:
        return self.sent.get("first_voiced")

    @property
    def last_voiced_sent(self) -> float | None:
        return self.sent.get("last_voiced")


class PacedMic:
    """Streams ``input_audio_buffer.append`` at real time; use as an async context manager."""

    def __init__(self, client: RealtimeTestClient, rate: int, chunk_ms: int = 100) -> None:
        self.client = client
        self.rate = rate
        self.chunk_ms = chunk_ms
        self.step = rate * chunk_ms // 1000
        self._pending = np.zeros(0, dtype=np.float32)
        self._sent = 0  # samples sent so far (the stream position)
        # (stream position, said, which mark) waiting for the chunk that holds the position.
        self._marks: list[tuple[int, Said, str]] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> PacedMic:
        self._task = asyncio.create_task(self._run(), name="paced-mic")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def say(self, clip: Speech, marks: dict[str, int] | None = None) -> Said:
        """Queue ``clip`` after whatever is still being said.

        Its first and last voiced samples are marked, and any ``marks`` (name:
        sample index in the clip); ``Said.sent`` gets the time each was sent.
        """
        if clip.rate != self.rate:
            raise ValueError(f"{clip.name} is at {clip.rate} Hz; the mic sends {self.rate} Hz")
        said = Said(clip)
        base = self._sent + len(self._pending)
        wanted = {"first_voiced": clip.start, "last_voiced": clip.end - 1, **(marks or {}),
                  FINISHED: len(clip.samples) - 1}
        self._marks += [(base + index, said, name) for name, index in wanted.items()]
        self._pending = np.concatenate([self._pending, clip.samples])
        return said

    @property
    def speaking(self) -> bool:
        return len(self._pending) > 0

    async def _run(self) -> None:
        started = time.monotonic()
        index = 0
        while True:
            delay = started + index * self.chunk_ms / 1000.0 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            chunk, self._pending = self._pending[: self.step], self._pending[self.step :]
            if len(chunk) < self.step:
                chunk = np.concatenate([chunk, np.zeros(self.step - len(chunk), dtype=np.float32)])
            payload = base64.b64encode(encode_audio(chunk)).decode("ascii")
            await self.client.send("input_audio_buffer.append", audio=payload)
            self._sent += self.step
            self._resolve(time.monotonic())
            index += 1

    def _resolve(self, now: float) -> None:
        waiting = []
        for position, said, mark in self._marks:
            if position >= self._sent:
                waiting.append((position, said, mark))
                continue
            said.sent[mark] = now
            if mark == FINISHED:
                said.finished.set()
        self._marks = waiting


@contextlib.asynccontextmanager
async def session(url: str, *, timeout: float = 30.0, **session_fields: Any) -> AsyncIterator[RealtimeTestClient]:
    """A Realtime session with the timings extension on (plus ``session_fields``), past ``session.updated``.

    Benches read events unvalidated: schema checks are the tests' job, and
    their CPU would be measured here as server latency.
    """
    async with RealtimeTestClient.connect(url, timeout=timeout, validate=False) as client:
        first = await client.recv()
        if first.get("type") != "session.created":
            raise RuntimeError(f"the server did not open a session: {first.get('error') or first}")
        await client.update_session({"extensions": [TIMINGS_EXTENSION], **session_fields})
        yield client


@contextlib.asynccontextmanager
async def live_mic(url: str, rate: int, *, chunk_ms: int, timeout: float, lead_s: float,
                   **session_fields: Any) -> AsyncIterator[tuple[RealtimeTestClient, PacedMic]]:
    """A fresh :func:`session` with a :class:`PacedMic` that has already sent ``lead_s`` of silence.

    What a user's microphone looks like when they start talking: the stream is
    live before the first word, so the VAD's prefix pad has audio to keep.
    """
    async with session(url, timeout=timeout, **session_fields) as client, PacedMic(client, rate, chunk_ms) as mic:
        await asyncio.sleep(lead_s)
        yield client, mic


async def ask(client: RealtimeTestClient, mic: PacedMic, clip: Speech, timeout: float,
              marks: dict[str, int] | None = None) -> tuple[Said, Turn]:
    """Say ``clip`` and wait for the ``response.done`` of the turn it starts."""
    start = len(client.received)
    said = mic.say(clip, marks)
    done = await client.wait_for("response.done", timeout)
    return said, turn(client.received[start:], str(response_id(done)))
