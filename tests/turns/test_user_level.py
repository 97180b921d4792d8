"""The user's level: speech much quieter than the session's user's turns so far does not start a turn."""

from __future__ import annotations

from statistics import median

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.turns.user_level import REMEMBERED_TURNS, UserLevel, level_db

LEVELS = st.floats(-90.0, 0.0)


@given(st.lists(LEVELS, max_size=12), LEVELS, st.floats(0.0, 30.0))
def test_speech_is_taken_iff_it_is_within_the_margin_of_the_user_s_recent_turns(
        turns: list[float], level: float, margin: float) -> None:
    user = UserLevel(margin)
    for taken in turns:
        user.took(taken)
    recent = turns[-REMEMBERED_TURNS:]
    expected = margin == 0 or not recent or level >= median(recent) - margin
    assert user.accepts(level) is expected
    assert user.accepts(level, 0.0) is (margin == 0 or not recent or level >= median(recent))


def test_the_level_of_a_full_scale_tone_and_of_one_twenty_db_under_it() -> None:
    t = np.arange(1600) / 16000
    loud = np.sin(2 * np.pi * 440 * t).astype(np.float32)
    assert abs(level_db([loud]) - 20 * np.log10(np.sqrt(0.5))) < 0.1
    assert abs(level_db([loud]) - level_db([loud * 0.1]) - 20.0) < 0.1
    assert level_db([]) == level_db([np.zeros(10, np.float32)]) == -100.0
