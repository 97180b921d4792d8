"""Helpers for the client tests: spoken WAVs, a fake transport, scripted server events."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech.audio.wav import write_wav
from speech_to_speech.client.config import RealtimeAudioClientConfig
from speech_to_speech.client.playback import Playback
from speech_to_speech.client.session import ClientSession
from speech_to_speech.testing.realtime_client import silence, tone

# A 0.6 s tone is a turn to the scripted VAD; 10 ms of tone per reply character keeps replies short.
SCRIPTED: dict[str, Any] = {
    "vad": "scripted",
    "stt": "scripted",
    "llm": "scripted",
    "tts": "scripted",
    "min_silence_ms": 300,
    "speech_pad_ms": 100,
    "scripted_tts_ms_per_char": 10.0,
    "release_timeout_s": 3.0,
}
MS_PER_CHAR = SCRIPTED["scripted_tts_ms_per_char"]

Event = dict[str, Any]




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


class FakeTransport:
    """A ClientSession with no socket: server events go in, the client events it sent are kept."""

    def __init__(self, tmp_out_rate: int = 24000, **config: Any) -> None:
        self.sent: list[Event] = []
        self.config = RealtimeAudioClientConfig(show_transcript=False, **config)
        self.playback = Playback(self.config.recv_rate, tmp_out_rate, self.config.jitter_ms)
        self.session = ClientSession(self.config, self.playback, self._send)

    def _send(self, event: Event) -> str:
        event = {"event_id": f"evt_{len(self.sent) + 1}", **event}
        self.sent.append(event)
        return str(event["event_id"])

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
