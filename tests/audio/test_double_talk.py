"""Double talk: when the microphone is heard through the linear canceller, and when that canceller may learn."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.audio.double_talk import (
    ACTIVE_DB,
    ADDED_DB,
    CANCELLED_DB,
    EARLY_LEARNT_FRAMES,
    EARLY_TALK_FRAMES,
    HOLD_FRAMES,
    LOST_FRAMES,
    MIN_ERLE_DB,
    MIN_LEARNT_FRAMES,
    SETTLE_FRAMES,
    TALK_FRAMES,
    TALKER_DB,
    TALKER_UNDER_ECHO_DB,
    DoubleTalk,
    FrameLevels,
    Verdict,
)

levels = st.builds(
    FrameLevels,
    reference_db=st.sampled_from([-90.0, ACTIVE_DB - 1.0, ACTIVE_DB, -20.0]),
    microphone_db=st.floats(-80.0, -5.0),
    aec_db=st.floats(-90.0, -5.0),
    linear_db=st.floats(-90.0, -5.0),
    linear_ready=st.booleans(),
)


def _echo_alone(erle_db: float = 25.0) -> FrameLevels:
    return FrameLevels(reference_db=-20.0, microphone_db=-20.0, aec_db=-65.0, linear_db=-20.0 - erle_db,
                       linear_ready=True)


def _talking() -> FrameLevels:
    return FrameLevels(reference_db=-20.0, microphone_db=-17.0, aec_db=-40.0, linear_db=-20.0, linear_ready=True)


def _run(frames: list[FrameLevels]) -> list[Verdict]:
    double_talk = DoubleTalk()
    return [double_talk.update(frame) for frame in frames]


@given(st.lists(levels, max_size=300))
@settings(max_examples=200, deadline=None)
def test_heard_through_the_linear_canceller_exactly_while_a_talk_frame_is_recent(frames: list[FrameLevels]) -> None:
    verdicts = _run(frames)
    for i, verdict in enumerate(verdicts):
        recent = verdicts[max(0, i - HOLD_FRAMES + 1):i + 1]
        talks = [j for j, v in enumerate(recent) if v.talk]
        # ... and the linear canceller has not been found adding echo since
        assert verdict.linear == bool(talks and not any(v.lost for v in recent[talks[-1] + 1:]))


@given(st.lists(levels, max_size=300))
@settings(max_examples=200, deadline=None)
def test_talk_needs_the_assistant_speaking_a_ready_filter_and_a_run_of_loud_unexplained_frames(
        frames: list[FrameLevels]) -> None:
    double_talk = DoubleTalk()
    for i, frame in enumerate(frames):
        erle_before, learnt_before = double_talk.erle_db, double_talk.learnt
        verdict = double_talk.update(frame)
        if verdict.talk:
            assert frame.reference_db >= ACTIVE_DB and frame.linear_ready
            assert erle_before is not None and erle_before >= MIN_ERLE_DB and learnt_before >= EARLY_LEARNT_FRAMES
            run = TALK_FRAMES if learnt_before >= MIN_LEARNT_FRAMES else EARLY_TALK_FRAMES  # (a measure on fewer)
            assert i + 1 >= run
            assert all(f.linear_db >= TALKER_DB and f.linear_ready for f in frames[i + 1 - run:i + 1])


@given(st.lists(levels, max_size=300))
@settings(max_examples=200, deadline=None)
def test_the_filter_learns_only_from_echo_alone(frames: list[FrameLevels]) -> None:
    for frame, verdict in zip(frames, _run(frames), strict=True):
        if verdict.adapt:
            assert not verdict.talk
            assert frame.reference_db >= ACTIVE_DB and frame.linear_ready
            assert frame.microphone_db - frame.aec_db >= CANCELLED_DB


@given(st.integers(0, 200), st.integers(TALK_FRAMES, 100), st.integers(0, 200))
@settings(max_examples=100, deadline=None)
def test_a_talker_over_a_learnt_echo_is_held_then_released(before: int, talking: int, after: int) -> None:
    frames = [_echo_alone()] * (before + MIN_LEARNT_FRAMES) + [_talking()] * talking + [_echo_alone()] * after
    verdicts = _run(frames)
    start = before + MIN_LEARNT_FRAMES
    assert not any(v.linear for v in verdicts[:start])  # echo alone is never taken for a talker
    assert all(v.linear for v in verdicts[start + TALK_FRAMES - 1:start + talking])
    released = start + talking + HOLD_FRAMES - 1
    assert all(v.linear for v in verdicts[start + talking:released])
    assert not any(v.linear for v in verdicts[released:])
    assert not any(v.adapt for v in verdicts[start:start + talking])  # the talker does not teach the filter


@given(st.integers(0, MIN_LEARNT_FRAMES + 20), st.integers(0, 60))
@settings(max_examples=100, deadline=None)
def test_a_talker_early_in_the_answer_is_told_apart_on_a_longer_run(learnt: int, talking: int) -> None:
    # an answer's first pause can keep the measure under MIN_LEARNT_FRAMES past 1.5 s into it: a talker then is
    # told apart on a longer run, once a few frames are learnt (before, a "Wait." said then was lost whole)
    verdicts = _run([_echo_alone()] * learnt + [_talking()] * talking)[learnt:]
    if learnt >= MIN_LEARNT_FRAMES:
        run = TALK_FRAMES
    elif learnt >= EARLY_LEARNT_FRAMES:
        run = EARLY_TALK_FRAMES
    else:
        assert not any(v.linear for v in verdicts)
        return
    assert [v.talk for v in verdicts] == [False] * min(talking, run - 1) + [True] * (talking - run + 1)


@given(st.integers(0, 100), st.integers(0, 60))
@settings(max_examples=50, deadline=None)
def test_a_linear_canceller_that_adds_echo_is_made_to_learn_anew(before: int, after: int) -> None:
    adding = FrameLevels(reference_db=-20.0, microphone_db=-20.0, aec_db=-65.0, linear_db=-20.0 + ADDED_DB + 1.0,
                         linear_ready=True)
    double_talk = DoubleTalk()
    for frame in [_echo_alone()] * MIN_LEARNT_FRAMES + [_talking()] * before:
        double_talk.update(frame)
    verdicts = [double_talk.update(adding) for _ in range(LOST_FRAMES)]
    assert [v.lost for v in verdicts] == [False] * (LOST_FRAMES - 1) + [True]
    assert double_talk.erle_db is None and not verdicts[-1].linear
    # until it has learnt the echo again, no talker is taken for one
    assert not any(double_talk.update(_talking()).linear for _ in range(after))


@given(st.floats(0.0, MIN_ERLE_DB - 0.5))
def test_a_filter_that_has_not_learnt_the_echo_hears_no_talker(erle_db: float) -> None:
    verdicts = _run([_echo_alone(erle_db)] * MIN_LEARNT_FRAMES + [_talking()] * 50)
    assert not any(v.linear for v in verdicts)


@given(st.integers(LOST_FRAMES, 60), st.floats(ADDED_DB + 0.5, 20.0))
@settings(max_examples=50, deadline=None)
def test_a_pause_in_the_echo_does_not_make_the_filter_learn_anew(frames: int, added_db: float) -> None:
    # the echo falls silent (the answer pauses): what the filter predicts of its tail outweighs the microphone
    # (above TALKER_DB, for a loud echo), but it lies far under the echo's level: not an echo path gone wrong
    pause = FrameLevels(reference_db=-20.0, microphone_db=-60.0, aec_db=-90.0, linear_db=-60.0 + added_db,
                        linear_ready=True)
    double_talk = DoubleTalk()
    for frame in [_echo_alone()] * MIN_LEARNT_FRAMES:
        double_talk.update(frame)
    erle_db = double_talk.erle_db
    verdicts = [double_talk.update(pause) for _ in range(frames)]
    assert not any(v.lost for v in verdicts)
    assert double_talk.erle_db == erle_db


@given(st.floats(0.5, 8.0))
@settings(max_examples=50, deadline=None)
def test_a_soft_stretch_of_the_echo_left_well_under_its_level_is_not_a_talker(under_db: float) -> None:
    # the filter explains a soft stretch of the answer less well than its loud ones: little is taken off, but
    # what is left lies far under the echo's level; a talker 6 dB under the echo is over the line
    soft = FrameLevels(reference_db=-20.0, microphone_db=-20.0 - TALKER_UNDER_ECHO_DB - under_db + 3.0, aec_db=-65.0,
                       linear_db=-20.0 - TALKER_UNDER_ECHO_DB - under_db, linear_ready=True)
    talker = FrameLevels(reference_db=-20.0, microphone_db=-19.0, aec_db=-45.0, linear_db=-26.0, linear_ready=True)
    assert not any(v.talk for v in _run([_echo_alone()] * MIN_LEARNT_FRAMES + [soft] * 50))
    assert any(v.talk for v in _run([_echo_alone()] * MIN_LEARNT_FRAMES + [talker] * TALK_FRAMES))


@given(st.integers(0, SETTLE_FRAMES - 1))
@settings(max_examples=30, deadline=None)
def test_after_the_speaker_stops_its_echo_tail_neither_teaches_nor_resets_the_filter(wait: int) -> None:
    # the client stops a little before or after where the reference ends: the tail's frames match it poorly
    adding = FrameLevels(reference_db=-20.0, microphone_db=-30.0, aec_db=-65.0, linear_db=-20.0, linear_ready=True)
    double_talk = DoubleTalk()
    for frame in [_echo_alone()] * MIN_LEARNT_FRAMES:
        double_talk.update(frame)
    erle_db = double_talk.erle_db
    double_talk.stopped()
    for _ in range(wait):
        double_talk.update(_echo_alone())
    settling = [double_talk.update(adding) for _ in range(SETTLE_FRAMES - wait)]
    assert not any(v.lost or v.adapt for v in settling)
    assert double_talk.erle_db == erle_db
    after = [double_talk.update(adding) for _ in range(LOST_FRAMES)]
    assert after[-1].lost  # settled, a filter that adds echo learns anew again


@given(st.lists(levels, min_size=SETTLE_FRAMES, max_size=SETTLE_FRAMES + 50), st.booleans())
@settings(max_examples=100, deadline=None)
def test_a_cut_off_reply_hears_the_user_through_a_learnt_filter_while_its_tail_dies(frames: list[FrameLevels],
                                                                                   learnt: bool) -> None:
    # a reply is cut off because the user talks: what they say under its tail is not AEC3's to take off
    double_talk = DoubleTalk()
    for _ in range(MIN_LEARNT_FRAMES):
        double_talk.update(_echo_alone(25.0 if learnt else MIN_ERLE_DB - 1.0))
    double_talk.stopped()
    verdicts = [double_talk.update(frame) for frame in frames]
    if learnt:  # (but not through a path being checked against a restarted echo: it may be off it)
        assert all(v.linear == frame.linear_ready for v, frame in zip(verdicts[:SETTLE_FRAMES], frames, strict=False))
    else:  # (a filter not trusted hears no talker either)
        assert not any(v.linear for v in verdicts)
