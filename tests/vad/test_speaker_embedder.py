"""The speaker embedder: the user's own clips print close to their first turn, another voice does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.turns.user_voice import THRESHOLD
from speech_to_speech.vad.speaker_embedder import N_MELS, SpeakerEmbedder, log_mel, mel_filters

RATE = 16000
TURNS = Path(__file__).resolve().parents[1] / "fixtures" / "turns"


def test_the_features_are_forty_log_mel_energies_every_ten_ms() -> None:
    t = np.arange(RATE) / RATE
    tone = (0.1 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    features = log_mel(tone)
    assert features.shape == (1 + (RATE - 512) // 160, N_MELS)
    assert int(np.argmax(features[10])) == int(np.argmax(mel_filters()[:, 1000 * 512 // RATE]))  # 1 kHz's band
    assert log_mel(tone[:500]).shape == (0, N_MELS)


@pytest.mark.real_models
def test_the_user_s_clips_are_theirs_and_a_lower_voice_is_not() -> None:
    embedder = SpeakerEmbedder()
    clips = [read_wav(path, RATE)[0] for path in sorted(TURNS.glob("*.wav"))]
    user = embedder.voice_print(clips[0])
    assert user is not None
    for clip in clips[1:]:
        own, other = embedder.voice_print(clip), embedder.voice_print(resample(clip, int(RATE * 2 ** (-5 / 12)), RATE))
        assert own is not None and other is not None
        assert float(user @ own) >= THRESHOLD > float(user @ other)
