"""bench room's echo_bargein part: how a trial over the echo is judged from its events, and the echo's level."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from speech_to_speech.bench import audio, room_audio
from speech_to_speech.bench.echo_bargein import echo_gain, judged, share_heard, summary_of
from speech_to_speech.bench.room_flags import add_room_flags, room_config
from speech_to_speech.testing.echo_rig import EchoRun
from speech_to_speech.testing.room import Room

SAID = audio.Speech("hibari: Stop, stop. What time is it now?", "Stop, stop. What time is it now?",
                    np.zeros(10, np.float32), 24000, 0, 10)


def _trial(events: list[tuple[float, dict]], answer_at: int, voiced_at: float | None, *,
           playing: bool = True) -> dict:
    run = EchoRun([e for _, e in events], answer_at, voiced_at, playing)
    return judged(run, [at for at, _ in events], SAID)


def _done(status: str) -> dict:
    return {"type": "response.done", "response": {"status": status}}


AUDIO = {"type": "response.output_audio.delta"}
STARTED = {"type": "input_audio_buffer.speech_started"}


def test_speech_started_after_the_user_spoke_is_a_barge_in_heard_and_their_words_count() -> None:
    trial = _trial([(0.0, AUDIO), (2.0, STARTED), (2.1, _done("cancelled")),
                    (2.8, {"type": "conversation.item.input_audio_transcription.completed",
                           "transcript": "Stop. What time is it?"})], 0, 1.5)
    assert trial["heard"] and not trial["missed"] and trial["self_interruptions"] == 0
    assert trial["status"] == "cancelled"
    assert trial["speech_to_speech_started_ms"] == 500.0
    assert trial["words_heard"] == pytest.approx(6 / 7, abs=1e-3)  # all but "now" ("stop" said twice)


def test_speech_started_before_the_user_spoke_is_the_echo_heard_as_the_user() -> None:
    trial = _trial([(0.0, AUDIO), (0.9, STARTED), (5.0, _done("completed"))], 0, 1.5)
    assert not trial["heard"] and trial["self_interruptions"] == 1 and not trial["missed"]
    assert trial["self_interruption_ms_into_answer"] == [900]


REQUEST = audio.Speech("hibari: a story", "Please tell me a long story about a lighthouse keeper and a lost seagull.",
                       np.zeros(96000, np.float32), 24000, 2400, 84000)  # voiced 0.1-3.5 s


@pytest.mark.parametrize(("audio_start_ms", "went_on"), [(3000, True), (3600, False), (8000, False)])
def test_speech_that_began_within_the_request_is_the_user_going_on_not_the_echo(audio_start_ms: int,
                                                                                 went_on: bool) -> None:
    events: list[tuple[float, dict]] = [(0.0, AUDIO), (0.3, {**STARTED, "audio_start_ms": audio_start_ms}),
              (0.5, {"type": "conversation.item.input_audio_transcription.completed",
                     "transcript": "Please tell me a long story about a lighthouse keeper and a lost seagull."}),
              (5.0, _done("completed"))]
    trial = judged(EchoRun([e for _, e in events], 0, 1.5, True), [at for at, _ in events], SAID, request=REQUEST)
    assert (trial["request_went_on"], trial["self_interruptions"]) == ((1, 0) if went_on else (0, 1))
    assert trial["request_words_heard"] == 1.0 and not trial["heard"]
    assert summary_of([trial])["runs_with_request_went_on"] == int(went_on)


def test_speech_that_began_after_the_interruption_ended_is_the_replys_echo_not_the_user() -> None:
    events: list[tuple[float, dict]] = [(0.0, AUDIO), (2.0, {**STARTED, "audio_start_ms": 5000}),
                                        (2.1, _done("cancelled")),
              (3.5, {**STARTED, "audio_start_ms": 6400})]  # the reply's echo, after the user said it all
    run = EchoRun([e for _, e in events], 0, 1.5, True, interruption_end_ms=6000.0)
    trial = judged(run, [at for at, _ in events], SAID)
    assert trial["heard"] and trial["speech_to_speech_started_ms"] == 500.0
    assert (trial["reply_self_interruptions"], trial["self_interruptions"]) == (1, 0)
    assert summary_of([trial])["runs_with_reply_self_interruption"] == 1
    alone = EchoRun([e for i, (_, e) in enumerate(events) if i != 1], 0, 1.5, True, interruption_end_ms=6000.0)
    assert not judged(alone, [at for i, (at, _) in enumerate(events) if i != 1], SAID)["heard"]


def test_an_answer_played_out_before_the_user_spoke_is_missed_not_judged() -> None:
    trials = [_trial([(0.0, AUDIO), (1.0, _done("completed"))], 0, 1.5, playing=False),
              _trial([(0.0, AUDIO), (2.0, STARTED), (2.1, _done("cancelled"))], 0, 1.5)]
    assert trials[0]["missed"]
    counted = summary_of(trials)
    assert (counted["trials"], counted["missed"], counted["heard"], counted["cancelled"]) == (2, 1, 1, 1)


def test_an_answer_made_before_the_user_spoke_but_still_playing_is_judged() -> None:
    # a fast machine sends the whole answer ahead of its playback: response.done comes first
    trial = _trial([(0.0, AUDIO), (1.0, _done("incomplete")), (2.0, STARTED)], 0, 1.5)
    assert not trial["missed"] and trial["heard"] and trial["status"] == "incomplete"


def test_words_are_matched_whatever_their_case_and_punctuation() -> None:
    assert share_heard("Hold on a second.", ["hold ON, a second"]) == 1.0
    assert share_heard("Hold on a second.", []) == 0.0


@pytest.mark.real_models
@pytest.mark.parametrize("relative", [0.0, 6.0])
def test_the_room_puts_the_echo_of_hibaris_voice_at_the_level_asked(relative: float) -> None:
    rate = 24000
    gain = echo_gain(-20.0, relative, 150, rate)
    answer = audio.synthesize(["The keeper climbed the stairs and lit the lamp for the ships at sea."], rate)[0]
    heard = Room(delay_ms=150, gain=gain, rate=rate).echo_of(answer)
    assert room_audio.voiced_level_db(heard) == pytest.approx(-20.0 + relative, abs=2.0)


def test_the_users_level_is_a_flag_of_bench_room() -> None:
    parser = argparse.ArgumentParser()
    add_room_flags(parser)
    parser.add_argument("--timeout", type=float, default=None)
    given = room_config(parser.parse_args(["--human-speech", "data", "--user-db", "-26", "--echo-db", "6"]))
    assert (given.user_db, given.echo_db) == (-26.0, (6.0,))
    assert room_config(parser.parse_args(["--human-speech", "data"])).user_db == -20.0
