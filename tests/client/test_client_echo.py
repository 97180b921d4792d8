"""`talk` with a microphone that hears its speaker: what the speaker plays is taken out of what is sent.

A simulated device pair stands in for PortAudio: one thread, in real time,
asks the speaker's callback for each block and hands the microphone's
callback what a room made of it (late, quieter, reverberant, over noise).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.client.config import RealtimeAudioClientConfig
from speech_to_speech.client.echo import DeviceEcho
from speech_to_speech.client.playback import Playback
from speech_to_speech.client.runner import _devices
from speech_to_speech.testing.room import Room
from speech_to_speech.testing.sound_devices import install_fake_sounddevice

DEVICE_RATE = 48000
BLOCK = 480  # 10 ms
SEND_RATE = 24000
FIXTURES = Path(__file__).parents[1] / "fixtures" / "turns"
PAIR = [{"name": "Laptop", "max_input_channels": 1, "max_output_channels": 1, "default_samplerate": 48000.0}]


class DevicePair:
    """The speaker's and the microphone's streams on one clock, the room between them."""

    def __init__(self, room: Room, seconds: float) -> None:
        self.room, self.blocks = room, int(seconds * DEVICE_RATE) // BLOCK
        self.output: Any = None
        self.input: Any = None
        self.played = np.zeros(self.blocks * BLOCK, np.float32)
        self.heard = np.zeros(self.blocks * BLOCK, np.float32)
        self._thread: threading.Thread | None = None

    def stream(self, **kwargs: Any) -> Any:
        pair = self

        class Stream:
            latency = 0.02  # what PortAudio reports: 20 ms each way

            def __init__(self) -> None:
                self.callback = kwargs["callback"]
                self.is_input = "blocksize" in kwargs  # the microphone asks for a block size

            def start(self) -> None:
                pair.output = self

            def __enter__(self) -> Stream:
                pair.input = self
                pair._thread = threading.Thread(target=pair._run)
                pair._thread.start()
                return self

            def __exit__(self, *exc: object) -> None:
                pass

            def stop(self) -> None:
                pass

            def close(self) -> None:
                pass

        return Stream()

    def _run(self) -> None:
        echo = self.room.echo_of  # over the whole timeline so far: the simulation need not be fast
        rir_samples = len(self.room.impulse_response()) + self.room.delay_ms * DEVICE_RATE // 1000
        noise = self.room.noise(len(self.heard))
        started = time.monotonic()
        for index in range(self.blocks):
            span = slice(index * BLOCK, (index + 1) * BLOCK)
            out = np.zeros((BLOCK, 1), np.float32)
            if self.output is not None:
                self.output.callback(out, BLOCK, None, None)
            self.played[span] = out[:, 0]
            window = max(0, span.start - rir_samples)
            self.heard[span] = echo(self.played[window:span.stop])[-BLOCK:] + noise[span]
            self.input.callback(self.heard[span, None], BLOCK, None, None)
            time.sleep(max(0.0, (index + 1) * BLOCK / DEVICE_RATE - (time.monotonic() - started)))


def _assistant() -> np.ndarray:
    speech = np.concatenate([read_wav(FIXTURES / f"{n}.wav", SEND_RATE)[0]
                             for n in ("whole_robot_story", "cut_black_holes_and")])
    return (speech * 32767).astype(np.int16)


def _db(samples: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(samples.astype(np.float64) ** 2) + 1e-15))


async def _talk_beside(pair: DevicePair, config: RealtimeAudioClientConfig, speaker_ahead_s: float) -> np.ndarray:
    microphone, speaker = _devices(config)
    if speaker.echo is not None and speaker_ahead_s:
        # The speaker's callbacks ran this long before the microphone opened (silence, as it does).
        speaker.echo.played(np.zeros(int(speaker_ahead_s * DEVICE_RATE), np.float32))
    playback = Playback(SEND_RATE, speaker.rate, jitter_ms=0)
    playback.feed("r1", "i1", _assistant())
    playback.response_done("r1")
    speaker.start(playback)
    sent = []
    async for chunk in microphone.chunks():
        sent.append(chunk)
        if sum(map(len, sent)) >= (pair.blocks - 2) * BLOCK * SEND_RATE // DEVICE_RATE:
            break
    await speaker.close()
    return np.concatenate(sent)


@pytest.mark.parametrize(("cancel", "speaker_ahead_s"), [(True, 0.0), (True, 1.0), (False, 0.0)])
def test_what_the_speaker_plays_is_taken_out_of_what_the_microphone_sends(
        monkeypatch: pytest.MonkeyPatch, cancel: bool, speaker_ahead_s: float) -> None:
    pair = DevicePair(Room(delay_ms=80, rate=DEVICE_RATE), seconds=4.5)
    install_fake_sounddevice(monkeypatch, PAIR, default=(0, 0), stream=pair.stream)
    config = RealtimeAudioClientConfig(echo_cancellation=cancel)
    sent = asyncio.run(asyncio.wait_for(_talk_beside(pair, config, speaker_ahead_s), 30))
    heard = resample(pair.heard, DEVICE_RATE, SEND_RATE)[: len(sent)]
    settled = 2 * SEND_RATE  # the canceller has found the echo by then
    removed = _db(heard[settled:]) - _db(sent[settled:])
    if cancel:
        assert removed > 15.0, f"{removed:.1f} dB removed"
    else:
        assert abs(removed) < 1.0  # sent as heard


def test_echo_cancellation_is_on_by_default_between_devices_and_off_with_a_wav(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    install_fake_sounddevice(monkeypatch, PAIR, default=(0, 0), stream=DevicePair(Room(), 1.0).stream)
    microphone, speaker = _devices(RealtimeAudioClientConfig())
    assert isinstance(microphone.echo, DeviceEcho) and speaker.echo is microphone.echo
