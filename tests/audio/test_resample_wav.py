from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.io import wavfile

from speech_to_speech.audio.resample import StreamResampler, resample, to_float32, to_int16
from speech_to_speech.audio.wav import read_wav, write_wav


def sine(rate: int, seconds: float = 1.0, frequency: float = 440.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (0.5 * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


@pytest.mark.parametrize(("rate_in", "rate_out"), [(48000, 16000), (24000, 16000), (16000, 24000), (44100, 16000)])
@pytest.mark.parametrize("piece", [160, 333, 4096])
def test_chunked_resampling_matches_one_shot(rate_in: int, rate_out: int, piece: int) -> None:
    signal = sine(rate_in)
    stream = StreamResampler(rate_in, rate_out)
    parts = [stream.process(signal[i : i + piece]) for i in range(0, len(signal), piece)]
    chunked = np.concatenate([*parts, stream.flush()])
    whole = resample(signal, rate_in, rate_out)
    assert abs(len(chunked) - len(whole)) <= 1
    n = min(len(chunked), len(whole))
    assert np.max(np.abs(chunked[:n] - whole[:n])) < 1e-3
    assert abs(len(whole) - rate_out) <= 1


def test_resampling_keeps_the_frequency() -> None:
    out = resample(sine(48000, frequency=1000.0), 48000, 16000)
    spectrum = np.abs(np.fft.rfft(out))
    assert np.argmax(spectrum) * 16000 / len(out) == pytest.approx(1000.0, abs=2)


def test_same_rate_passes_through() -> None:
    signal = sine(16000)
    stream = StreamResampler(16000, 16000)
    np.testing.assert_array_equal(stream.process(signal), signal)
    assert len(stream.flush()) == 0


def test_int16_float_conversions_roundtrip_and_clip() -> None:
    samples = np.array([0, 16384, -16384, 32767, -32768], dtype=np.int16)
    assert np.max(np.abs(to_int16(to_float32(samples)).astype(int) - samples)) <= 1
    np.testing.assert_array_equal(to_int16(np.array([2.0, -2.0], np.float32)), [32767, -32767])


def test_read_wav_mixes_down_and_resamples(tmp_path: Path) -> None:
    stereo = np.stack([sine(48000), sine(48000)], axis=1)
    path = tmp_path / "stereo.wav"
    wavfile.write(str(path), 48000, (stereo * 32767).astype(np.int16))
    samples, rate = read_wav(path, 16000)
    assert rate == 16000 and samples.dtype == np.float32 and samples.ndim == 1
    assert abs(len(samples) - 16000) <= 1
    assert np.max(np.abs(samples)) == pytest.approx(0.5, abs=0.02)


def test_write_then_read_wav(tmp_path: Path) -> None:
    path = tmp_path / "out" / "a.wav"
    write_wav(path, sine(24000), 24000)
    samples, rate = read_wav(path)
    assert rate == 24000
    np.testing.assert_allclose(samples, sine(24000), atol=1e-4)
