"""bench room's sounds: levels set by voiced RMS, a voice mixed over the room where it says it is."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.bench import audio, room_audio

RATE = room_audio.RATE


def _tone_with_silence(level: float) -> np.ndarray:
    t = np.arange(RATE // 2) / RATE
    return np.concatenate([np.zeros(RATE // 4), level * np.sin(2 * np.pi * 300 * t), np.zeros(RATE // 4)]).astype(
        np.float32)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.01, 0.9), st.floats(-50.0, -6.0))  # above the voiced-frame floor (1e-3 RMS)
def test_a_clip_is_set_to_the_voiced_level_asked_whatever_its_silence(level: float, wanted: float) -> None:
    scaled = room_audio.at_level(_tone_with_silence(level), wanted)
    assert abs(room_audio.voiced_level_db(scaled) - wanted) < 0.05


def test_a_voice_over_the_room_keeps_its_words_where_they_are_said() -> None:
    voice = audio.speech("v", "hello", _tone_with_silence(0.3), RATE)
    room = room_audio.fan_noise(5.0) * 0.001
    said = room_audio.mixed(voice, room, RATE)
    assert said.start == RATE + voice.start and said.end == RATE + voice.end
    np.testing.assert_allclose(said.samples[RATE:RATE + len(voice.samples)],
                               room[2 * RATE:2 * RATE + len(voice.samples)] + voice.samples, atol=1e-6)
