"""The canceller's output held back while the assistant speaks: no word stretched or cut, the delay given back."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.audio.held_output import HELD_FRAMES, HeldFrame, HeldOutput, Source

FRAME = 160
LOUD, QUIET = 0.1, 1e-4  # -20 and -80 dBFS


def _frame(number: int, loud: bool) -> HeldFrame:
    """A frame whose samples say which it was (the same through every canceller)."""
    samples = np.full(FRAME, (LOUD if loud else QUIET) * (1.0 + number * 1e-4), np.float32)
    return HeldFrame({"microphone": samples, "linear": samples, "aec": samples}, "aec")


def _number(samples: np.ndarray, loud: bool) -> int:
    return round((float(samples[0]) / (LOUD if loud else QUIET) - 1.0) * 1e4)


@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=400))
@settings(max_examples=200, deadline=None)
def test_every_loud_frame_is_sent_once_in_order_and_the_delay_stays_bounded(frames: list[tuple[bool, bool]]) -> None:
    output = HeldOutput(FRAME)
    loud_sent = []
    for number, (loud, hold) in enumerate(frames):
        sent = output.send(_frame(number, loud), hold=hold)
        assert len(sent) == FRAME
        assert output.delay_frames <= HELD_FRAMES
        if abs(float(sent[0])) > LOUD / 2:
            loud_sent.append(_number(sent, loud=True))
    loud_in = [number for number, (loud, _) in enumerate(frames) if loud]
    # what is still held is not yet sent; nothing loud was repeated, left out or reordered
    assert loud_sent == loud_in[:len(loud_sent)]
    assert len(loud_in) - len(loud_sent) <= output.delay_frames


@given(st.integers(0, 50), st.integers(0, 50))
@settings(max_examples=50, deadline=None)
def test_the_delay_is_taken_on_while_the_assistant_speaks_and_given_back_after(before: int, after: int) -> None:
    output = HeldOutput(FRAME)
    for number in range(before):
        output.send(_frame(number, loud=False), hold=False)
    assert output.delay_frames == 0  # outside an answer the output runs as early as the microphone
    for number in range(HELD_FRAMES + after):
        output.send(_frame(number, loud=False), hold=True)
    assert output.delay_frames == HELD_FRAMES
    for number in range(HELD_FRAMES):
        output.send(_frame(number, loud=False), hold=False)
    assert output.delay_frames == 0


def test_a_talker_over_speech_without_pauses_gets_the_delay_back_once_overdue() -> None:
    output = HeldOutput(FRAME)
    for number in range(HELD_FRAMES):
        output.send(_frame(number, loud=False), hold=True)
    given_back = [output.send(_frame(number, loud=True), hold=False) for number in range(400)]
    assert output.delay_frames == 0  # (a noisy room: no frame was quiet)
    assert all(abs(float(sent[0])) > LOUD / 2 for sent in given_back[HELD_FRAMES:])


def test_reaching_back_has_the_frames_still_held_heard_through_the_linear_canceller() -> None:
    output = HeldOutput(FRAME)
    heard: dict[Source, np.ndarray] = {"microphone": np.full(FRAME, 0.3, np.float32),
                                       "linear": np.full(FRAME, 0.2, np.float32),
                                       "aec": np.full(FRAME, 1e-4, np.float32)}
    before = [output.send(HeldFrame(heard, "aec"), hold=True) for _ in range(HELD_FRAMES + 5)]
    output.reach_back("linear")
    after = [output.send(HeldFrame(heard, "aec"), hold=True) for _ in range(HELD_FRAMES + 3)]
    assert all(round(float(frame[-1]), 4) == 1e-4 for frame in before)
    # the HELD_FRAMES frames held when the talker was told apart go out through the linear canceller
    assert [round(float(frame[-1]), 4) for frame in after] == [0.2] * HELD_FRAMES + [1e-4] * 3
