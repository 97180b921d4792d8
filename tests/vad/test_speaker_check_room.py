"""The speaker check remembers the room: after a voice that is not the user's, speech as loud as the user must
sound like them too, for ``ROOM_MEMORY_S``; in a quiet room the user's level alone lets them in."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from speech_to_speech.vad import speaker_check
from speech_to_speech.vad.speaker_check import ROOM_MEMORY_S, SpeakerCheck

USER = np.array([1.0, 0.0], np.float32)
OTHER = np.array([0.0, 1.0], np.float32)


class _Prints:
    """An embedder whose next print is whatever the test says."""

    def __init__(self) -> None:
        self.next = USER
        self.passes = 0

    def voice_print(self, samples: Any) -> np.ndarray:
        self.passes += 1
        return self.next


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(speaker_check.time, "monotonic", lambda: now[0])
    return now


def _enrolled() -> tuple[SpeakerCheck, _Prints]:
    prints = _Prints()
    check = SpeakerCheck(prints)  # type: ignore[arg-type]
    assert check.learn([np.ones(16000, np.float32)])  # the user's first turn
    return check, prints


def test_in_a_quiet_room_speech_at_the_user_s_level_needs_no_print(clock: list[float]) -> None:
    check, prints = _enrolled()
    passes = prints.passes
    assert check.sounds_like_user([np.ones(4000, np.float32)], 250, level=-20.0, reference=-20.0)
    assert prints.passes == passes


def test_after_another_voice_speech_at_the_user_s_level_must_sound_like_them_until_the_room_is_quiet(
        clock: list[float]) -> None:
    check, prints = _enrolled()
    prints.next = OTHER
    check.new_speech()
    assert not check.sounds_like_user([np.ones(8000, np.float32)], 500, level=-26.0, reference=-20.0)
    check.new_speech()  # the television's loud sentence: at the user's level, still not the user
    assert not check.sounds_like_user([np.ones(4000, np.float32)], 250, level=-20.0, reference=-20.0)
    assert not check.sounds_like_user([np.ones(8000, np.float32)], 500, level=-20.0, reference=-20.0)
    prints.next = USER
    check.new_speech()  # the user, at their level: let in by their print
    assert check.sounds_like_user([np.ones(8000, np.float32)], 500, level=-20.0, reference=-20.0)
    clock[0] += ROOM_MEMORY_S + 1  # the other voice was heard last 30 s ago: the level suffices again
    check.new_speech()
    passes = prints.passes
    assert check.sounds_like_user([np.ones(4000, np.float32)], 250, level=-20.0, reference=-20.0)
    assert prints.passes == passes


def test_a_turn_taken_that_was_not_the_user_s_marks_the_room_too(clock: list[float]) -> None:
    check, prints = _enrolled()
    prints.next = OTHER
    assert not check.learn([np.ones(16000, np.float32)])
    check.new_speech()
    assert not check.sounds_like_user([np.ones(4000, np.float32)], 250, level=-20.0, reference=-20.0)


def test_speech_too_short_for_a_print_is_judged_by_what_there_was_at_its_end(clock: list[float]) -> None:
    check, prints = _enrolled()
    prints.next = OTHER
    assert not check.learn([np.ones(16000, np.float32)])  # the room talks: a short word needs a print
    prints.next = USER
    check.new_speech()  # the user's short "Stop." at their level
    assert not check.sounds_like_user([np.ones(4000, np.float32)], 250, level=-20.0, reference=-20.0)
    assert check.sounds_like_user([np.ones(5000, np.float32)], 320, level=-20.0, reference=-20.0, ended=True)
    prints.next = OTHER
    check.new_speech()  # the television's short word
    assert not check.sounds_like_user([np.ones(5000, np.float32)], 320, level=-20.0, reference=-20.0, ended=True)


def test_a_voice_heard_while_the_assistant_played_says_nothing_of_the_room(clock: list[float]) -> None:
    check, prints = _enrolled()
    prints.next = OTHER
    check.new_speech(echoed=True)  # what the echo canceller left of the answer: not the user's voice
    assert not check.sounds_like_user([np.ones(8000, np.float32)], 500, level=-26.0, reference=-20.0)
    prints.next = USER
    check.new_speech()  # so the user's next words at their level need no print
    passes = prints.passes
    assert check.sounds_like_user([np.ones(4000, np.float32)], 250, level=-20.0, reference=-20.0)
    assert prints.passes == passes
