"""Audio for the test client: the signals tests speak (tone, silence, a turn the scripted VAD hears)
and the wire formats it sends and reads back (PCM16, G.711 µ-law and A-law).
"""

from __future__ import annotations

import base64
import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech.testing.server_event_schema import ProtocolViolation


def tone(seconds: float, rate: int, frequency: float = 440.0, level: float = 0.3) -> npt.NDArray[np.float32]:
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    return (level * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


def silence(seconds: float, rate: int) -> npt.NDArray[np.float32]:
    return np.zeros(int(seconds * rate), dtype=np.float32)


def spoken_turn(
    rate: int, speech_s: float = 0.6, silence_s: float = 0.8, lead_s: float = 0.1
) -> npt.NDArray[np.float32]:
    """Silence, a loud tone (speech to the scripted VAD), then enough silence to end the turn."""
    return np.concatenate([silence(lead_s, rate), tone(speech_s, rate), silence(silence_s, rate)])


def _ulaw_encode_one(sample: int) -> int:
    # G.711 µ-law, written from the standard independently of the server's tables.
    sign = 0x80 if sample < 0 else 0
    magnitude = min(abs(sample), 32635) + 0x84
    exponent = magnitude.bit_length() - 8
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return ~(sign | (exponent << 4) | mantissa) & 0xFF


def _ulaw_decode_one(code: int) -> int:
    code = ~code & 0xFF
    magnitude = ((((code & 0x0F) << 3) + 0x84) << ((code >> 4) & 0x07)) - 0x84
    return -magnitude if code & 0x80 else magnitude


def _alaw_encode_one(sample: int) -> int:
    value = sample >> 3
    if value >= 0:
        mask = 0xD5
    else:
        mask, value = 0x55, -value - 1
    segment = max(0, value.bit_length() - 5)
    if segment >= 8:
        return 0x7F ^ mask
    shift = 1 if segment < 2 else segment
    return ((segment << 4) | ((value >> shift) & 0x0F)) ^ mask


def _alaw_decode_one(code: int) -> int:
    code ^= 0x55
    magnitude = (code & 0x0F) << 4
    segment = (code >> 4) & 0x07
    if segment == 0:
        magnitude += 8
    else:
        magnitude = (magnitude + 0x108) << (segment - 1)
    return magnitude if code & 0x80 else -magnitude


@functools.cache
def _g711_tables(fmt: str) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int16]]:
    encode_one, decode_one = (
        (_ulaw_encode_one, _ulaw_decode_one) if fmt == "audio/pcmu" else (_alaw_encode_one, _alaw_decode_one)
    )
    encode = np.array([encode_one(v) for v in range(-32768, 32768)], dtype=np.uint8)
    decode = np.array([decode_one(c) for c in range(256)], dtype=np.int16)
    return encode, decode


def encode_audio(samples: npt.NDArray[Any], fmt: str = "audio/pcm") -> bytes:
    """Float32 (-1..1) or int16 samples -> wire bytes of ``fmt``."""
    pcm = samples if samples.dtype == np.int16 else (np.clip(samples, -1, 1) * 32767).astype(np.int16)
    if fmt == "audio/pcm":
        return pcm.astype("<i2").tobytes()
    encode, _ = _g711_tables(fmt)
    return encode[pcm.astype(np.int32) + 32768].tobytes()


def decode_audio(payload: str | bytes, fmt: str = "audio/pcm") -> npt.NDArray[np.int16]:
    """Base64 text (or raw bytes) of ``fmt`` -> int16 samples."""
    raw = base64.b64decode(payload, validate=True) if isinstance(payload, str) else payload
    if fmt == "audio/pcm":
        if len(raw) % 2:
            raise ProtocolViolation("PCM16 audio with an odd number of bytes")
        return np.frombuffer(raw, dtype="<i2").astype(np.int16)
    _, decode = _g711_tables(fmt)
    return decode[np.frombuffer(raw, dtype=np.uint8)]
