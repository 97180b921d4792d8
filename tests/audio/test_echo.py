"""The echo canceller takes the assistant's voice out of the microphone and leaves the user's in."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.echo import EchoCanceller
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.testing.echo_stream import stream
from speech_to_speech.testing.room import Room

FIXTURES = Path(__file__).parents[1] / "fixtures" / "turns"
SETTLED = 2 * PIPELINE_RATE  # the canceller has found the echo path by then


def _speech(*names: str) -> np.ndarray:
    return np.concatenate([read_wav(FIXTURES / f"{name}.wav", PIPELINE_RATE)[0] for name in names])


ASSISTANT = ("whole_robot_story", "continuation_rome", "cut_black_holes_and", "finished_twelve_fifteen")


def _envelope(samples: np.ndarray) -> np.ndarray:
    frames = samples[: len(samples) // 160 * 160].reshape(-1, 160).astype(np.float64)
    return 10 * np.log10(np.mean(frames**2, axis=1) + 1e-10)


def _follows(samples: np.ndarray, source: np.ndarray) -> float:
    """How closely the loudness of ``samples`` follows ``source``'s, 10 ms by 10 ms (a correlation)."""
    return float(np.corrcoef(_envelope(samples), _envelope(source))[0, 1])


def _db(samples: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(samples.astype(np.float64) ** 2) + 1e-15))


def _run(canceller: EchoCanceller, played: np.ndarray, mic: np.ndarray, chunk: int = 320) -> np.ndarray:
    """Stream like a session: the reply handed to the speaker in 100 ms pieces ahead of the microphone."""

    def hand_over(start: int) -> None:
        if start % 1600 == 0:
            canceller.played(played[start:start + 1600])

    return stream(canceller, mic, chunk=chunk, before=hand_over)


@pytest.mark.parametrize("delay_ms", [50, 150, 300])
def test_the_echo_is_removed_once_the_path_is_found(delay_ms: int) -> None:
    room = Room(delay_ms=delay_ms)
    played = _speech(*ASSISTANT)
    mic = room.echo_of(played) + room.noise(len(played))
    out = _run(EchoCanceller(), played, mic)
    removed = _db(mic[SETTLED:len(out)]) - _db(out[SETTLED:])
    assert removed > 20.0, f"{removed:.1f} dB of echo removed"


def test_a_user_talking_over_the_echo_is_kept() -> None:
    room = Room(delay_ms=150)
    played = _speech(*ASSISTANT)
    user = np.zeros_like(played)
    words = _speech("unfinished_rome_uh") * 0.8
    start = len(played) - len(words) - PIPELINE_RATE // 2
    user[start:start + len(words)] = words
    echo = room.echo_of(played)
    mic = echo + user + room.noise(len(played))
    out = _run(EchoCanceller(), played, mic)
    span = slice(start, start + len(words))
    assert abs(_db(out[span]) - _db(user[span])) < 6.0  # the user's level, give or take
    # What is left is the user's voice: its loudness follows the user's words more closely than the
    # microphone's did, and no longer the echo's (the microphone's followed both). Samples themselves
    # do not line up: the high-pass filter and the suppressor shift their phase.
    assert _follows(out[span], user[span]) > _follows(mic[span], user[span])
    assert _follows(mic[span], echo[span]) > 0.3
    assert _follows(out[span], echo[span]) < 0.2


@pytest.mark.parametrize("echo_over_user_db", [0.0, 6.0])
def test_a_user_who_went_on_as_the_answer_began_is_heard_when_they_talk_over_it(echo_over_user_db: float) -> None:
    # The turn ended in a pause and the user went on over the answer's first 0.6 s (the path is found and
    # first learnt while they talk); 1.8 s into the answer they talk over it, the echo as loud or 6 dB louder.
    room = Room(delay_ms=150, gain=10 ** (echo_over_user_db / 20))
    lead = 3 * PIPELINE_RATE // 2
    played = np.concatenate([np.zeros(lead, np.float32), _speech(*ASSISTANT)])
    echo = room.echo_of(played)
    going_on, over = _speech("cut_tomorrow_morning_to"), _speech("unfinished_rome_uh")
    scale = np.sqrt(np.mean(echo[lead:] ** 2) / np.mean(over**2)) * 10 ** (-echo_over_user_db / 20)
    user = np.zeros_like(played)
    going_on_end = lead + 6 * PIPELINE_RATE // 10
    user[going_on_end - len(going_on):going_on_end] = going_on * scale
    start = lead + 18 * PIPELINE_RATE // 10
    user[start:start + len(over)] = over * scale
    mic = echo + user + room.noise(len(played))
    out = _run(EchoCanceller(), played, mic)
    span = slice(start, start + len(over))
    assert abs(_db(out[span]) - _db(user[span])) < 3.0  # AEC3 alone took 7-11 dB off them
    alone = slice(lead + PIPELINE_RATE, start)  # the echo alone between the two
    assert _db(mic[alone]) - _db(out[alone]) > 25.0


@pytest.mark.parametrize("echo_over_user_db", [0.0, 6.0])
@pytest.mark.parametrize("start_s", [2.5, 6.0])
def test_a_talker_over_the_echo_keeps_their_first_syllable(start_s: float, echo_over_user_db: float) -> None:
    # A talker is told apart only after a run of frames the echo path does not explain; AEC3 took the frames
    # before that off with the echo: the first 100 ms of these words came out 15-29 dB down, and a short "Wait."
    # over the echo fell under the voice a turn needs (live). The frames held back are heard whole.
    room = Room(delay_ms=150)
    played = _speech(*ASSISTANT)
    echo = room.echo_of(played)
    words = _speech("unfinished_rome_uh")[:PIPELINE_RATE // 2]
    words *= np.sqrt(np.mean(echo[PIPELINE_RATE:] ** 2) / np.mean(words**2)) * 10 ** (-echo_over_user_db / 20)
    user = np.zeros_like(played)
    start = int(start_s * PIPELINE_RATE)
    user[start:start + len(words)] = words
    out = _run(EchoCanceller(), played, echo + user + room.noise(len(played)))
    first = slice(start, start + PIPELINE_RATE // 10)
    assert abs(_db(out[first]) - _db(user[first])) < 3.0


def test_with_nothing_played_the_microphone_passes_through() -> None:
    mic = _speech("whole_robot_story") * 0.5
    out = _run(EchoCanceller(), np.zeros(0, np.float32), mic)
    assert abs(_db(out[SETTLED // 4:]) - _db(mic[SETTLED // 4:len(out)])) < 1.0


def test_output_keeps_pace_with_the_input_in_whole_frames() -> None:
    canceller = EchoCanceller()
    lengths = [37, 160, 1, 500, 999]
    total = sum(len(canceller.cancel(np.zeros(n, np.float32))) for n in lengths)
    assert total == sum(lengths) // 160 * 160


def test_the_reference_plays_in_real_time_and_stops_when_dropped() -> None:
    canceller = EchoCanceller()
    canceller.played(np.zeros(PIPELINE_RATE, np.float32))  # one second queued on the speaker
    canceller.cancel(np.zeros(PIPELINE_RATE // 4, np.float32))  # a quarter of it plays meanwhile
    assert canceller.pending_reference_ms == 750
    canceller.stop_playing()
    assert canceller.pending_reference_ms == 0


def test_without_livekit_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "livekit", None)
    with pytest.raises(RuntimeError, match=r"pip install 'livekit"):
        EchoCanceller()


@pytest.mark.parametrize(("reply_after_ms", "talk_from_cut_ms"), [(600, -1000), (280, -1270)])
def test_a_reply_after_a_barge_in_whose_playback_starts_a_little_early_does_not_interrupt_itself(
        reply_after_ms: int, talk_from_cut_ms: int) -> None:
    # The user talks over the answer, which is cut off 4.5 s in; 0.6 s later the reply begins, its playback
    # started 10 ms earlier than its reference says (a client restarts a little off). The path learnt over the
    # answer, 10 ms off, took 0-3 dB off the reply's echo and the echo was heard through it as a talker. The
    # user is heard through the linear canceller for 400 ms after they stop: a reply ready 280 ms after the cut
    # (its words 200 ms past it) has its echo arrive in that time, and must not be heard through an unchecked path.
    rate, chunk, piece = PIPELINE_RATE, 320, 1600
    first, second = _speech(*ASSISTANT[:2]), _speech(*ASSISTANT[2:])
    cut = 45 * rate // 10
    reply = cut + reply_after_ms * rate // 1000
    played = np.zeros(reply + len(second), np.float32)
    played[:cut] = first[:cut]
    played[reply:] = second
    echo = Room(delay_ms=150).echo_of(np.concatenate([played[:cut], np.zeros(len(played) - cut, np.float32)]))
    echo[reply:] += Room(delay_ms=140).echo_of(second)
    words = _speech("finished_twelve_fifteen")
    user = np.zeros_like(played)
    talk = cut + talk_from_cut_ms * rate // 1000
    user[talk:talk + len(words)] = words * np.sqrt(np.mean(echo[:cut] ** 2) / np.mean(words**2))
    mic = echo + user + Room().noise(len(played))
    canceller = EchoCanceller()
    heard_through_linear: list[bool] = []

    def speaker(start: int) -> None:
        if start % piece == 0 and (start < cut or start >= reply):
            canceller.played(played[start:start + piece])
        if start == cut:
            canceller.stop_playing()

    cancelled = stream(canceller, mic, chunk=chunk, before=speaker,
                       after=lambda _: heard_through_linear.append(canceller.double_talk))
    talked = slice(talk, cut)
    assert abs(_db(cancelled[talked]) - _db(user[talked])) < 3.0  # the barge-in was heard
    echo_alone = slice(max(talk + len(words), reply) + 3 * rate // 20, len(cancelled))  # the reply's, the user done
    assert not any(heard_through_linear[echo_alone.start // chunk:])
    assert _db(mic[echo_alone]) - _db(cancelled[echo_alone]) > 25.0
    onset = slice(echo_alone.start, echo_alone.start + 3 * rate // 10)
    assert _db(mic[onset]) - _db(cancelled[onset]) > 15.0  # its first 300 ms too
