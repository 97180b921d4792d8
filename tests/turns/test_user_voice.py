"""The user's voice: after their first turns, speech quieter than them must sound like them to start a turn."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.turns.user_voice import ENROLL_TURNS, SURE_DB, UserVoice

DIM = 8


def _unit(values: list[float]) -> np.ndarray:
    v = np.asarray(values, np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


PRINTS = st.lists(st.floats(-1.0, 1.0), min_size=DIM, max_size=DIM).filter(
    lambda v: float(np.linalg.norm(v)) > 0.1).map(_unit)
TURNS = st.lists(st.tuples(PRINTS, st.one_of(st.just(0.0), st.floats(0.1, 10.0))), max_size=6)


@given(TURNS, PRINTS, st.floats(-0.5, 0.9))
def test_speech_is_the_user_s_iff_its_print_is_close_to_their_first_turns(
        turns: list[tuple[np.ndarray, float]], voice: np.ndarray, threshold: float) -> None:
    user = UserVoice(threshold)
    for print_, seconds in turns:
        user.enroll(print_, seconds)
    learnt = [(p, s) for p, s in turns if s > 0][:ENROLL_TURNS]
    assert user.enrolled is bool(learnt)
    assert user.learning is (len(learnt) < ENROLL_TURNS)
    if not learnt:
        assert user.accepts(voice)  # nothing is rejected before the user's voice is known
        return
    mean = sum(p.astype(np.float64) * s for p, s in learnt)
    cosine = float(np.dot(mean / np.linalg.norm(mean), voice))
    assert abs(user.similarity(voice) - cosine) < 1e-5
    if abs(cosine - threshold) > 1e-5:
        assert user.accepts(voice) is (cosine >= threshold)
    assert user.accepts(None)  # too short to print: not rejected by its voice


@given(st.booleans(), st.floats(-90.0, 0.0), st.one_of(st.none(), st.floats(-90.0, 0.0)))
def test_only_speech_not_as_loud_as_the_user_needs_a_print_and_only_once_their_voice_is_known(
        enrolled: bool, level: float, reference: float | None) -> None:
    user = UserVoice()
    if enrolled:
        user.enroll(_unit([1.0] * DIM), 1.0)
    assert user.needs_print(level, reference) is (enrolled and reference is not None and level < reference - SURE_DB)
