"""Microphone and speaker through sounddevice (PortAudio), with clear errors when there are none."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import numpy as np

from speech_to_speech.audio.resample import StreamResampler
from speech_to_speech.client.echo import DeviceEcho
from speech_to_speech.client.errors import AudioDeviceError
from speech_to_speech.client.playback import Playback, Samples

log = logging.getLogger(__name__)


# Only the microphone and speaker need PortAudio; --input-wav/--output-wav (and `serve`) never import sounddevice.
FILES_INSTEAD = "or use --input-wav FILE and --output-wav FILE"
INSTALL_PORTAUDIO = ("install PortAudio (Debian/Ubuntu: sudo apt-get install libportaudio2; "
                     "macOS: brew install portaudio)")


def sounddevice() -> ModuleType:
    """The sounddevice module, or AudioDeviceError saying in one line what to install."""
    try:
        import sounddevice as sd
    except OSError as error:  # the package is there but the PortAudio library is not
        raise AudioDeviceError(
            f"audio devices are unavailable: {error}; {INSTALL_PORTAUDIO}, {FILES_INSTEAD}"
        ) from None
    except ImportError as error:
        raise AudioDeviceError(f"audio devices are unavailable: cannot import sounddevice ({error}); "
                               f"pip install sounddevice, {FILES_INSTEAD}") from None
    return sd


def list_devices() -> str:
    """A table of the audio devices, or a one-line note that there are none."""
    sd = sounddevice()
    devices = list(sd.query_devices())
    if not devices:
        return "No audio devices found. Use --input-wav FILE and --output-wav FILE to talk without a sound card."
    default_in, default_out = sd.default.device
    lines = []
    for index, device in enumerate(devices):
        mark = ("<" if index == default_in else " ") + (">" if index == default_out else " ")
        lines.append(f"{mark} {index:3d} {device['name']}  (in {device['max_input_channels']}, "
                     f"out {device['max_output_channels']}, {device['default_samplerate']:.0f} Hz)")
    lines.append("< default input, > default output")
    return "\n".join(lines)


def resolve_device(spec: int | str | None, kind: str) -> tuple[int, int]:
    """(device index, native sample rate) of the ``kind`` ("input"/"output") device ``spec`` names."""
    sd = sounddevice()
    flag = f"--{kind}-device"
    channels_key = f"max_{kind}_channels"
    devices = list(sd.query_devices())
    if isinstance(spec, str) and spec.isdigit():
        spec = int(spec)
    if spec is None:
        index = sd.default.device[0 if kind == "input" else 1]
        if index is None or index < 0:
            candidates = [i for i, d in enumerate(devices) if d[channels_key] > 0]
            if not candidates:
                hint = "--input-wav FILE" if kind == "input" else "--output-wav FILE"
                raise AudioDeviceError(f"no audio {kind} device found (see --list-devices, or use {hint})")
            index = candidates[0]
    elif isinstance(spec, int):
        index = spec
    else:
        matches = [i for i, d in enumerate(devices) if spec.lower() in str(d["name"]).lower() and d[channels_key]]
        if not matches:
            raise AudioDeviceError(f"no audio {kind} device matches {flag} {spec!r} (see --list-devices)")
        index = matches[0]
    if not 0 <= index < len(devices) or devices[index][channels_key] <= 0:
        raise AudioDeviceError(f"{flag} {spec!r} is not an audio {kind} device (see --list-devices)")
    return index, int(devices[index]["default_samplerate"])


def check_devices(input_device: int | str | None, output_device: int | str | None, *,
                  need_input: bool, need_output: bool) -> None:
    """Fail early (before loading models) when a needed device is missing."""
    if need_input:
        resolve_device(input_device, "input")
    if need_output:
        resolve_device(output_device, "output")


class Microphone:
    """Captured audio as send-rate chunks; PortAudio's thread hands blocks to the event loop."""

    live = True  # audio captured while the mic is blocked is dropped, not delayed

    def __init__(self, device: int | str | None, send_rate: int, chunk_size: int,
                 echo: DeviceEcho | None = None) -> None:
        self.index, self.device_rate = resolve_device(device, "input")
        self.send_rate = send_rate
        self.chunk_size = chunk_size
        self.echo = echo  # what the speaker plays, taken out of every chunk
        self._resampler = StreamResampler(self.device_rate, send_rate)

    async def chunks(self) -> AsyncIterator[Samples]:
        sd = sounddevice()
        loop = asyncio.get_running_loop()
        blocks: asyncio.Queue[Samples] = asyncio.Queue()

        echo, rate = self.echo, self.device_rate

        def callback(indata: Any, frames: int, time_info: Any, status: Any) -> None:
            if echo is not None:
                echo.captured(frames, rate)
            loop.call_soon_threadsafe(blocks.put_nowait, np.array(indata[:, 0], dtype=np.float32))

        blocksize = max(1, self.chunk_size * self.device_rate // self.send_rate)
        try:
            stream = sd.InputStream(device=self.index, channels=1, samplerate=self.device_rate,
                                    blocksize=blocksize, dtype="float32", callback=callback)
        except (sd.PortAudioError, ValueError) as error:
            raise AudioDeviceError(f"cannot open the microphone (device {self.index}): {error}") from None
        if self.echo is not None:
            self.echo.device_latency("input", getattr(stream, "latency", 0.0))
        with stream:
            while True:
                chunk = self._resampler.process(await blocks.get())
                yield chunk if self.echo is None else self.echo.cancel(chunk)


class Speaker:
    """Plays the Playback buffer from PortAudio's output callback."""

    def __init__(self, device: int | str | None, echo: DeviceEcho | None = None) -> None:
        self.index, self.rate = resolve_device(device, "output")
        self.echo = echo  # told what is played, as it is played
        self._stream: Any = None

    def start(self, playback: Playback) -> None:
        sd = sounddevice()
        echo = self.echo

        def callback(outdata: Any, frames: int, time_info: Any, status: Any) -> None:
            block = playback.read(frames)[0]
            outdata[:, 0] = block
            if echo is not None:
                echo.played(block)

        try:
            self._stream = sd.OutputStream(device=self.index, channels=1, samplerate=self.rate,
                                           dtype="float32", callback=callback)
            self._stream.start()
        except (sd.PortAudioError, ValueError) as error:
            raise AudioDeviceError(f"cannot open the speaker (device {self.index}): {error}") from None
        if echo is not None:
            echo.device_latency("output", getattr(self._stream, "latency", 0.0))

    async def close(self) -> None:
        if self._stream is not None:
            with contextlib.suppress(sounddevice().PortAudioError):
                self._stream.stop()
                self._stream.close()
