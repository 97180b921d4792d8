from __future__ import annotations

import base64

import numpy as np
import pytest

from speech_to_speech.audio.codecs import (
    ALAW_DECODE,
    MULAW_DECODE,
    AudioDecodeError,
    WireFormat,
    decode,
    encode,
)

G711: list[WireFormat] = ["audio/pcmu", "audio/pcma"]


def sine(amplitude: float, n: int = 8000) -> np.ndarray:
    t = np.arange(n) / 8000
    return (amplitude * 32767 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)


def test_pcm16_roundtrips_exactly_as_little_endian_base64() -> None:
    samples = np.array([0, 1, -1, 32767, -32768, 1234], dtype=np.int16)
    payload = encode(samples, "audio/pcm")
    assert base64.b64decode(payload) == samples.astype("<i2").tobytes()
    np.testing.assert_array_equal(decode(payload, "audio/pcm"), samples)


def test_odd_pcm16_byte_count_is_rejected() -> None:
    with pytest.raises(AudioDecodeError):
        decode(base64.b64encode(b"\x00\x01\x02").decode(), "audio/pcm")


@pytest.mark.parametrize("fmt", ["audio/pcm", "audio/pcmu", "audio/pcma"])
def test_invalid_base64_is_rejected(fmt: WireFormat) -> None:
    with pytest.raises(AudioDecodeError):
        decode("not base64 at all!", fmt)


def test_g711_decoding_matches_the_standard_tables() -> None:
    # Reference points of ITU-T G.711 (as Python's old audioop decoded them).
    assert (MULAW_DECODE[0x00], MULAW_DECODE[0x80], MULAW_DECODE[0xFF], MULAW_DECODE[0x7F]) == (-32124, 32124, 0, 0)
    assert (ALAW_DECODE[0x55], ALAW_DECODE[0xD5], ALAW_DECODE[0x2A], ALAW_DECODE[0xAA]) == (-8, 8, -32256, 32256)
    assert np.all(np.diff(MULAW_DECODE[0x80:0x100].astype(int)) < 0)  # monotonic within a sign


@pytest.mark.parametrize("fmt", G711)
def test_g711_encodes_every_code_back_to_itself(fmt: WireFormat) -> None:
    table = MULAW_DECODE if fmt == "audio/pcmu" else ALAW_DECODE
    codes = np.frombuffer(base64.b64decode(encode(table, fmt)), dtype=np.uint8)
    # µ-law has two codes for zero; every other value maps back to its own code.
    np.testing.assert_array_equal(table[codes], table)
    assert len(base64.b64decode(encode(table, fmt))) == 256  # one byte per sample


@pytest.mark.parametrize("fmt", G711)
@pytest.mark.parametrize("amplitude", [0.01, 0.1, 0.9])
def test_g711_roundtrip_is_within_quantisation(fmt: WireFormat, amplitude: float) -> None:
    samples = sine(amplitude)
    back = decode(encode(samples, fmt), fmt).astype(float)
    error = back - samples
    snr_db = 10 * np.log10(np.mean(samples.astype(float) ** 2) / np.mean(error**2))
    assert snr_db > 25  # G.711 gives ~38 dB over most of its range
    # Companding: the error never exceeds half a step, and steps grow with the level (~1/16).
    assert np.all(np.abs(error) <= np.abs(samples) / 16 + 16)


@pytest.mark.parametrize("fmt", G711)
def test_g711_clips_beyond_the_largest_code(fmt: WireFormat) -> None:
    loudest = int((MULAW_DECODE if fmt == "audio/pcmu" else ALAW_DECODE).max())
    back = decode(encode(np.array([32767, -32768], dtype=np.int16), fmt), fmt)
    assert list(back) == [loudest, -loudest]
