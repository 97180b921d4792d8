"""The client's device code on any machine: a stand-in sounddevice module, or a PortAudio that will not load.

Whether a machine has the PortAudio library (``libportaudio2``) or a sound card
must not change what a test sees, so device tests pick one on purpose:

- ``install_fake_sounddevice(monkeypatch, devices)``: ``import sounddevice``
  gives a FakeSoundDevice listing ``devices`` (none: a machine with no card);
- ``without_portaudio(monkeypatch)``: ``import sounddevice`` fails as it does
  where the package is installed but the PortAudio library is not.
"""

from __future__ import annotations

import importlib.abc
import sys
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

# sounddevice's own error when it cannot load the library.
PORTAUDIO_NOT_FOUND = "PortAudio library not found"

# A microphone (the default input) and a headset (the default output).
DEVICES: list[dict[str, Any]] = [
    {"name": "Built-in Microphone", "max_input_channels": 2, "max_output_channels": 0, "default_samplerate": 48000.0},
    {"name": "USB Headset", "max_input_channels": 1, "max_output_channels": 2, "default_samplerate": 44100.0},
]


class PortAudioError(Exception):
    """sounddevice.PortAudioError."""


class FakeSoundDevice:
    """What the client uses of sounddevice: the device list, the defaults, streams and PortAudioError.

    ``stream(**kwargs)`` makes the InputStream/OutputStream objects (kept in ``streams``);
    without one, opening a stream raises PortAudioError.
    """

    PortAudioError = PortAudioError

    def __init__(self, devices: Sequence[dict[str, Any]] = (), default: tuple[int, int] = (-1, -1),
                 stream: Callable[..., Any] | None = None) -> None:
        self.devices = list(devices)
        self.default = types.SimpleNamespace(device=default)
        self.streams: list[Any] = []
        self._stream = stream

    def query_devices(self) -> list[dict[str, Any]]:
        return self.devices

    def _open(self, **kwargs: Any) -> Any:
        if self._stream is None:
            raise PortAudioError("no stream in this fake")
        self.streams.append(self._stream(**kwargs))
        return self.streams[-1]

    InputStream = _open
    OutputStream = _open


def install_fake_sounddevice(monkeypatch: pytest.MonkeyPatch, devices: Sequence[dict[str, Any]] = (),
                             default: tuple[int, int] = (-1, -1),
                             stream: Callable[..., Any] | None = None) -> FakeSoundDevice:
    """Make ``import sounddevice`` give a FakeSoundDevice (by default: PortAudio works, no devices)."""
    fake = FakeSoundDevice(devices, default, stream)
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    return fake


class _NoPortAudio(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "sounddevice":
            raise OSError(PORTAUDIO_NOT_FOUND)
        return None


def without_portaudio(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import sounddevice`` raise OSError, as it does without the PortAudio library."""
    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_NoPortAudio(), *sys.meta_path])
