"""Wire audio formats: base64 PCM16 little-endian, G.711 µ-law and A-law."""

from __future__ import annotations

import base64
from typing import Literal

import numpy as np
import numpy.typing as npt

WireFormat = Literal["audio/pcm", "audio/pcmu", "audio/pcma"]


class AudioDecodeError(ValueError):
    pass


def _mulaw_table() -> npt.NDArray[np.int16]:
    codes = ~np.arange(256, dtype=np.int32) & 0xFF
    sign = codes & 0x80
    exponent = (codes >> 4) & 0x07
    mantissa = codes & 0x0F
    magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84
    return np.where(sign != 0, -magnitude, magnitude).astype(np.int16)


def _alaw_table() -> npt.NDArray[np.int16]:
    codes = np.arange(256, dtype=np.int32) ^ 0x55
    sign = codes & 0x80
    exponent = (codes >> 4) & 0x07
    mantissa = codes & 0x0F
    magnitude = np.where(exponent == 0, (mantissa << 4) + 8, ((mantissa << 4) + 0x108) << (exponent - 1))
    return np.where(sign != 0, magnitude, -magnitude).astype(np.int16)


MULAW_DECODE = _mulaw_table()
ALAW_DECODE = _alaw_table()


def _encoder(table: npt.NDArray[np.int16]) -> npt.NDArray[np.uint8]:
    """Inverse table over all int16 values: nearest code by decoded value."""
    order = np.argsort(table, kind="stable")
    decoded = table[order].astype(np.int32)
    values = np.arange(-32768, 32768, dtype=np.int32)
    pos = np.clip(np.searchsorted(decoded, values), 1, len(decoded) - 1)
    nearer_left = (values - decoded[pos - 1]) <= (decoded[pos] - values)
    return order[np.where(nearer_left, pos - 1, pos)].astype(np.uint8)


MULAW_ENCODE = _encoder(MULAW_DECODE)
ALAW_ENCODE = _encoder(ALAW_DECODE)


def decode(payload: str, fmt: WireFormat) -> npt.NDArray[np.int16]:
    """base64 text of one wire format -> int16 samples."""
    try:
        raw = base64.b64decode(payload, validate=True)
    except (ValueError, TypeError) as error:
        raise AudioDecodeError("audio is not valid base64") from error
    if fmt == "audio/pcm":
        if len(raw) % 2:
            raise AudioDecodeError("PCM16 audio must have an even number of bytes")
        return np.frombuffer(raw, dtype="<i2").astype(np.int16)
    codes = np.frombuffer(raw, dtype=np.uint8)
    return (MULAW_DECODE if fmt == "audio/pcmu" else ALAW_DECODE)[codes]


def encode(samples: npt.NDArray[np.int16], fmt: WireFormat) -> str:
    """int16 samples -> base64 text of one wire format."""
    if fmt == "audio/pcm":
        raw = np.asarray(samples, dtype="<i2").tobytes()
    else:
        table = MULAW_ENCODE if fmt == "audio/pcmu" else ALAW_ENCODE
        raw = table[np.asarray(samples, dtype=np.int32) + 32768].tobytes()
    return base64.b64encode(raw).decode("ascii")
