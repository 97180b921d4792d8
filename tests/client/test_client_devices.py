"""Microphone and speaker code paths with a fake sounddevice module, so they run on any machine."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np
import pytest

from speech_to_speech.client.devices import Microphone, Speaker, list_devices, resolve_device
from speech_to_speech.client.errors import AudioDeviceError
from speech_to_speech.client.playback import Playback
from speech_to_speech.testing.client_audio import tone
from speech_to_speech.testing.sound_devices import DEVICES, FakeSoundDevice, install_fake_sounddevice


class FakeStream:
    """Calls its callback from a thread, like PortAudio, with ``blocks`` blocks of audio."""

    def __init__(self, *, device: int, channels: int, samplerate: int, callback: Any, blocksize: int = 441,
                 dtype: str = "float32", blocks: int = 10) -> None:
        self.device, self.samplerate, self.blocksize, self.callback = device, samplerate, blocksize, callback
        self.blocks = blocks
        self.played: list[np.ndarray] = []
        self._thread: threading.Thread | None = None

    def _run_input(self) -> None:
        signal = tone(self.blocks * self.blocksize / self.samplerate, self.samplerate)
        for index in range(self.blocks):
            self.callback(signal[index * self.blocksize : (index + 1) * self.blocksize, None], self.blocksize,
                          None, None)

    def __enter__(self) -> FakeStream:
        self._thread = threading.Thread(target=self._run_input)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._thread is not None
        self._thread.join()

    def start(self) -> None:
        for _ in range(self.blocks):
            out = np.zeros((self.blocksize, 1), np.float32)
            self.callback(out, self.blocksize, None, None)
            self.played.append(out[:, 0].copy())

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def fake_sd(monkeypatch: pytest.MonkeyPatch) -> FakeSoundDevice:
    return install_fake_sounddevice(monkeypatch, DEVICES, default=(0, 1), stream=FakeStream)


def test_devices_are_listed_with_the_defaults_marked(fake_sd: Any) -> None:
    assert list_devices().splitlines() == [
        "<    0 Built-in Microphone  (in 2, out 0, 48000 Hz)",
        " >   1 USB Headset  (in 1, out 2, 44100 Hz)",
        "< default input, > default output",
    ]


def test_devices_resolve_by_default_index_or_name(fake_sd: Any) -> None:
    assert resolve_device(None, "input") == (0, 48000)
    assert resolve_device(None, "output") == (1, 44100)
    assert resolve_device("1", "input") == (1, 44100)
    assert resolve_device("usb", "output") == (1, 44100)
    with pytest.raises(AudioDeviceError, match="--output-device 0 is not an audio output device"):
        resolve_device(0, "output")
    with pytest.raises(AudioDeviceError, match="no audio input device matches --input-device 'webcam'"):
        resolve_device("webcam", "input")


def test_without_defaults_the_first_capable_device_is_used(fake_sd: Any) -> None:
    fake_sd.default.device = (-1, -1)
    assert resolve_device(None, "output") == (1, 44100)
    fake_sd.devices = DEVICES[:1]
    with pytest.raises(AudioDeviceError, match="no audio output device found"):
        resolve_device(None, "output")


def test_the_microphone_yields_send_rate_audio(fake_sd: Any) -> None:
    mic = Microphone(None, send_rate=24000, chunk_size=480)

    async def capture() -> int:
        total = 0
        async for chunk in mic.chunks():
            total += len(chunk)
            if total >= 4000:
                return total
        return total

    assert asyncio.run(asyncio.wait_for(capture(), 10)) >= 4000
    (stream,) = fake_sd.streams
    assert (stream.device, stream.samplerate, stream.blocksize) == (0, 48000, 960)  # 20 ms at 48 kHz


def test_the_speaker_plays_the_playback_buffer_at_its_own_rate(fake_sd: Any) -> None:
    speaker = Speaker("USB")
    playback = Playback(24000, speaker.rate, jitter_ms=0)
    playback.feed("r1", "i1", (tone(0.05, 24000) * 32767).astype(np.int16))
    playback.response_done("r1")
    speaker.start(playback)
    asyncio.run(speaker.close())
    played = np.concatenate(fake_sd.streams[0].played)
    assert np.count_nonzero(np.abs(played) > 0.01) == pytest.approx(0.05 * 44100, rel=0.05)
