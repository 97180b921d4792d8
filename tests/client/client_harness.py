"""Helpers for the client tests: spoken WAVs, a fake transport, scripted server events."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech.audio.wav import write_wav
from speech_to_speech.client import SessionSummary, listen_and_play_realtime
from speech_to_speech.client.config import RealtimeAudioClientConfig
from speech_to_speech.client.files import WavRecorder
from speech_to_speech.client.playback import Playback
from speech_to_speech.client.session import ClientSession
from speech_to_speech.testing.client_audio import silence, tone
from speech_to_speech.testing.scripted import FAST_SCRIPTED

SCRIPTED = FAST_SCRIPTED
MS_PER_CHAR = SCRIPTED["scripted_tts_ms_per_char"]

Event = dict[str, Any]
TIMEOUT = 30.0
RATE = 24000




def write_turns(path: Path, rate: int = 16000, turns: int = 1, pause_s: float = 0.5, channels: int = 1) -> Path:
    """A WAV of ``turns`` spoken turns (tones) separated by ``pause_s`` of silence."""
    parts = [silence(0.2, rate)]
    for index in range(turns):
        parts += [tone(0.6, rate), silence(pause_s if index < turns - 1 else 0.2, rate)]
    audio = np.concatenate(parts)
    write_wav(path, np.stack([audio] * channels, 1) if channels > 1 else audio, rate)
    return path


def voiced_spans(samples: np.ndarray, rate: int, level: float = 0.05, gap_s: float = 0.2) -> list[float]:
    """Durations of the loud stretches of ``samples`` (quiet gaps shorter than ``gap_s`` are bridged)."""
    loud = np.flatnonzero(np.abs(samples) > level)
    if not len(loud):
        return []
    breaks = np.flatnonzero(np.diff(loud) > gap_s * rate)
    starts = np.concatenate([[loud[0]], loud[breaks + 1]])
    ends = np.concatenate([loud[breaks], [loud[-1]]])
    return [float(e - s) / rate for s, e in zip(starts, ends, strict=True)]


class SentEvents:
    """Keeps the client events a component sends, stamped with event ids as a transport would."""

    def __init__(self) -> None:
        self.sent: list[Event] = []

    def _send(self, event: Event) -> str:
        event = {"event_id": f"evt_{len(self.sent) + 1}", **event}
        self.sent.append(event)
        return str(event["event_id"])


class FakeTransport(SentEvents):
    """A ClientSession with no socket: server events go in, the client events it sent are kept."""

    def __init__(self, tmp_out_rate: int = 24000, **config: Any) -> None:
        super().__init__()
        self.config = RealtimeAudioClientConfig(show_transcript=False, **config)
        self.playback = Playback(self.config.recv_rate, tmp_out_rate, self.config.jitter_ms)
        self.session = ClientSession(self.config, self.playback, self._send)

    def feed(self, *events: Event) -> None:
        for event in events:
            self.session.handle(event)

    def sent_of(self, kind: str) -> list[Event]:
        return [e for e in self.sent if e["type"] == kind]


def audio_delta(response_id: str, item_id: str, seconds: float, rate: int = 24000) -> Event:
    pcm = (tone(seconds, rate) * 32767).astype("<i2").tobytes()
    return {"type": "response.output_audio.delta", "response_id": response_id, "item_id": item_id,
            "output_index": 0, "content_index": 0, "delta": base64.b64encode(pcm).decode()}


def response_done(response_id: str, status: str = "completed", output: list[Event] | None = None,
                  metadata: dict[str, str] | None = None) -> Event:
    return {"type": "response.done", "response": {"id": response_id, "status": status, "output": output or [],
                                                  "metadata": metadata}}


# ---------------------------------------------------------------- a live session with a scripted microphone


class ScriptedMic:
    """A live source the test speaks into: tones are speech to the scripted VAD."""

    live = True

    def __init__(self) -> None:
        self._chunks: asyncio.Queue[np.ndarray | None] = asyncio.Queue()

    def say(self, seconds: float = 0.6) -> None:
        self._chunks.put_nowait(tone(seconds, RATE))

    def pause(self, seconds: float = 0.8) -> None:
        self._chunks.put_nowait(silence(seconds, RATE))

    def turn(self) -> None:
        self.say()
        self.pause()

    def hang_up(self) -> None:
        self._chunks.put_nowait(None)

    async def chunks(self) -> AsyncIterator[np.ndarray]:
        while (chunk := await self._chunks.get()) is not None:
            for start in range(0, len(chunk), 2400):
                yield chunk[start : start + 2400]


class EventLog:
    """Server events as the client saw them, with waits that fail after a timeout."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = asyncio.Event()

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()

    async def wait_for(self, match: Callable[[Event], bool], count: int = 1) -> Event:
        async def found() -> Event:
            while True:
                hits = [e for e in self.events if match(e)]
                if len(hits) >= count:
                    return hits[count - 1]
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(found(), TIMEOUT)
        except TimeoutError:
            raise AssertionError(f"not seen; events: {[e['type'] for e in self.events]}") from None


def kind(name: str, **fields: Any) -> Callable[[Event], bool]:
    return lambda e: e["type"] == name and all(
        (e.get(k) if k != "status" else e.get("response", {}).get("status")) == v for k, v in fields.items())


async def converse(url: str, tmp_path: Path, script: Callable[[ScriptedMic, EventLog], Any],
                   **config: Any) -> tuple[SessionSummary, EventLog]:
    """Run the client with a scripted microphone while ``script`` speaks and checks; then hang up."""
    mic, log = ScriptedMic(), EventLog()
    client_config = RealtimeAudioClientConfig(url=url, show_transcript=False, jitter_ms=0, **config)
    session = asyncio.create_task(listen_and_play_realtime(
        client_config, source=mic, sink=WavRecorder(tmp_path / "answer.wav"), on_event=log))
    try:
        await log.wait_for(kind("session.updated"))
        await asyncio.wait_for(script(mic, log), TIMEOUT)
    finally:
        mic.hang_up()
    return await asyncio.wait_for(session, TIMEOUT), log


