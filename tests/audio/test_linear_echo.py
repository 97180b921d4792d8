"""The linear canceller finds the echo's delay, learns its path, and leaves a talker's samples as they were."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.linear_echo import LinearEcho
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.testing.room import Room

FIXTURES = Path(__file__).parents[1] / "fixtures" / "turns"
FRAME = PIPELINE_RATE // 100


def _speech(*names: str) -> np.ndarray:
    return np.concatenate([read_wav(FIXTURES / f"{name}.wav", PIPELINE_RATE)[0] for name in names])


def _db(samples: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(samples.astype(np.float64) ** 2) + 1e-15))


def _cancel(linear: LinearEcho, played: np.ndarray, mic: np.ndarray, learn_until: int) -> np.ndarray:
    out = []
    for start in range(0, len(mic) - FRAME + 1, FRAME):
        out.append(linear.process(played[start:start + FRAME], mic[start:start + FRAME]))
        if start < learn_until:
            linear.learn()
    return np.concatenate(out)


@pytest.mark.parametrize("delay_ms", [40, 150, 320])
def test_the_echo_path_is_found_and_learnt_within_the_first_seconds(delay_ms: int) -> None:
    room = Room(delay_ms=delay_ms)
    played = _speech("whole_robot_story", "continuation_rome")
    mic = room.echo_of(played) + room.noise(len(played))
    linear = LinearEcho(FRAME, PIPELINE_RATE)
    out = _cancel(linear, played, mic, learn_until=len(mic))
    assert linear.ready
    second = slice(PIPELINE_RATE, 3 * PIPELINE_RATE)  # the second and third seconds of the answer
    removed = _db(mic[second]) - _db(out[second])
    assert removed > 15.0, f"{removed:.1f} dB of echo removed"


def test_a_talker_passes_sample_for_sample_with_only_the_echo_taken_away() -> None:
    room = Room(delay_ms=150)
    played = _speech("whole_robot_story", "continuation_rome", "cut_black_holes_and")
    words = _speech("unfinished_rome_uh") * 0.5
    start = len(played) - len(words) - PIPELINE_RATE // 2
    user = np.zeros_like(played)
    user[start:start + len(words)] = words
    echo = room.echo_of(played)
    mic = echo + user + room.noise(len(played))
    out = _cancel(LinearEcho(FRAME, PIPELINE_RATE), played, mic, learn_until=start)  # frozen while they talk
    span = slice(start, start + len(words))
    assert abs(_db(out[span]) - _db(user[span])) < 1.0
    left = _db(out[span] - user[span])  # what is left of the echo over the talker
    assert _db(echo[span]) - left > 15.0
    assert float(np.corrcoef(out[span], user[span])[0, 1]) > 0.95  # the same samples: no suppression, no phase


def test_a_user_talking_as_the_path_is_found_leaves_a_filter_that_takes_echo_off() -> None:
    # The answer starts while the user is still talking, as loud as its echo, through the first 0.6 s of it:
    # the window the path is found and first learnt in holds their voice.
    room = Room(delay_ms=150)
    lead = 3 * PIPELINE_RATE // 2
    played = np.concatenate([np.zeros(lead, np.float32), _speech("whole_robot_story", "continuation_rome")])
    echo = room.echo_of(played)
    words = _speech("cut_tomorrow_morning_to")
    talk_end = lead + 6 * PIPELINE_RATE // 10
    user = np.zeros_like(played)
    user[talk_end - len(words):talk_end] = words * np.sqrt(np.mean(echo[lead:] ** 2) / np.mean(words**2))
    mic = echo + user + room.noise(len(played))
    linear = LinearEcho(FRAME, PIPELINE_RATE)
    out = _cancel(linear, played, mic, learn_until=len(mic))  # (learning through the talk, as AEC3 hid it)
    after = slice(talk_end + PIPELINE_RATE // 2, talk_end + 3 * PIPELINE_RATE // 2)
    assert linear.ready
    assert _db(mic[after]) - _db(out[after]) > 15.0  # not a filter pulled off the path by the talker


def test_a_window_full_of_talk_does_not_replace_a_path_already_learnt() -> None:
    # The path is learnt from the answer's first two seconds; then the user talks for three, the filter told
    # not to learn from it (as double talk does), while the delay's looks learn the path again from windows
    # that are mostly their voice. After the talk the echo is taken off as well as had they said nothing.
    room = Room(delay_ms=150)
    played = _speech("whole_robot_story", "continuation_rome", "cut_black_holes_and", "finished_twelve_fifteen")
    echo = room.echo_of(played) + room.noise(len(played))
    talk, words = 2 * PIPELINE_RATE, _speech("unfinished_rome_uh")
    user = np.zeros_like(played)
    user[talk:talk + len(words)] = words * 2.0
    check = slice(talk + len(words) + PIPELINE_RATE // 5, talk + len(words) + 6 * PIPELINE_RATE // 5)
    removed = []
    for mic in (echo + user, echo):
        out = _cancel(LinearEcho(FRAME, PIPELINE_RATE), played, mic, learn_until=talk)
        removed.append(_db(echo[check]) - _db(out[check]))
    talked_over, alone = removed
    assert talked_over > alone - 3.0, f"{talked_over:.1f} dB removed after the talk, {alone:.1f} without it"


@pytest.mark.parametrize(("moved_ms", "gap_ms", "cut_s"),
                         [(-30, 500, None), (-10, 500, None), (20, 500, None), (-10, 160, None), (20, 160, None),
                          (-20, 300, 2.2)])
def test_an_answer_whose_echo_comes_a_little_off_after_a_restart_is_cancelled_from_its_start(
        moved_ms: int, gap_ms: int, cut_s: float | None) -> None:
    # One answer teaches the path; the speaker stops, and the next answer's playback starts ``moved_ms`` off
    # where its reference puts it (a client's playback restarts half an append or so off). The filter is frozen
    # over the second answer, so only moving the path it learnt can take its echo off. A reply ready 160 ms
    # after the first was cut starts while the filter still predicts the first one's tail: that is not its echo.
    # An answer cut 2.2 s in has its path's re-learning looks still to come: from a window of the first
    # answer's echo, they would learn the path back to where it was.
    first, second = _speech("whole_robot_story", "continuation_rome"), _speech("cut_black_holes_and")
    if cut_s is not None:
        first = first[:int(cut_s * PIPELINE_RATE)]
    elif gap_ms < 500:  # cut off mid-word
        loud = np.flatnonzero(np.abs(first[:len(first) * 3 // 4]) > 0.2)
        first = first[:loud[-1]]
    gap = PIPELINE_RATE * gap_ms // 1000
    mic = np.concatenate([Room(delay_ms=150).echo_of(np.concatenate([first, np.zeros(gap, np.float32)])),
                          Room(delay_ms=150 + moved_ms).echo_of(second)])
    mic = mic + Room().noise(len(mic))
    played = np.concatenate([first, np.zeros(gap, np.float32), second])
    linear = LinearEcho(FRAME, PIPELINE_RATE)
    restart = len(first) + gap
    _cancel(linear, played[:restart], mic[:restart], learn_until=len(first))
    assert linear.ready
    linear.restarted()
    mic, played = mic[restart:], played[restart:]
    out, checked, unchecked = [], None, False
    for start in range(0, len(mic) - FRAME + 1, FRAME):
        out.append(linear.process(played[start:start + FRAME], mic[start:start + FRAME]))
        unchecked = unchecked or not linear.ready  # the path is not trusted until the restart's echo is checked
        if checked is None and unchecked and linear.ready:
            checked = start + FRAME
    assert checked is not None
    echo_start = int(np.argmax(np.abs(mic) > 0.01))
    assert checked - echo_start < PIPELINE_RATE // 5  # checked on its first 200 ms of echo
    heard = slice(checked, checked + PIPELINE_RATE)
    removed = _db(mic[heard]) - _db(np.concatenate(out)[heard])
    assert removed > 15.0, f"{removed:.1f} dB of the restarted answer's echo removed"
