"""bench room's remarks and interruptions: how a trial over the answer is judged from the session's events."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.bench.room import trial_of
from speech_to_speech.testing.realtime_client import Received, played_out_at

RID = "resp_story"


def _audio(seconds: float) -> dict[str, Any]:
    pcm = bytes(int(24000 * seconds) * 2)  # 24 kHz PCM16 silence
    return {"type": "response.output_audio.delta", "response_id": RID, "delta": base64.b64encode(pcm).decode()}


def _done(status: str) -> dict[str, Any]:
    return {"type": "response.done", "response": {"id": RID, "status": status}}


STARTED = {"type": "input_audio_buffer.speech_started"}
ACKNOWLEDGED = {"type": "overlap.decision", "action": "acknowledge", "reason": "backchannel",
                "metadata": {"transcript": "Yeah."}}
OWN_ANSWER = {"type": "response.created", "response": {"id": "resp_own"}}


def _trial(before: list[tuple[float, dict[str, Any]]], after: list[tuple[float, dict[str, Any]]],
           began: float = 1.5) -> dict[str, Any]:
    log = [Received(event, at) for at, event in before + after]
    return trial_of(log, len(before), RID, "hibari: Yeah.", began)


def test_a_remark_over_an_answer_sent_in_full_but_still_playing_counts_and_plays_on() -> None:
    """All of the answer came at once (a GPU, a remote TTS): the client still plays it when the user speaks."""
    trial = _trial([(0.0, _audio(4.0)), (0.1, _done("completed"))], [(2.2, ACKNOWLEDGED)])
    assert not trial["missed"] and not trial["stopped"] and trial["own_answers"] == 0
    assert trial["decision"] == {"action": "acknowledge", "reason": "backchannel", "transcript": "Yeah."}


def test_speech_started_over_a_sent_answer_stops_it_though_nothing_was_cancelled() -> None:
    trial = _trial([(0.0, _audio(4.0)), (0.1, _done("completed"))], [(1.9, STARTED), (2.5, OWN_ANSWER)])
    assert not trial["missed"] and trial["stopped"] and trial["status"] == "completed"
    assert trial["speech_to_speech_started_ms"] == 400.0 and "speech_to_cancelled_ms" not in trial


def test_an_answer_cancelled_while_it_is_made_is_stopped() -> None:
    trial = _trial([(0.0, _audio(0.5)), (1.0, _audio(0.5))], [(1.8, STARTED), (1.8, _done("cancelled"))])
    assert not trial["missed"] and trial["stopped"] and trial["speech_to_cancelled_ms"] == 300.0


def test_an_answer_played_out_before_the_user_spoke_is_missed_not_judged() -> None:
    assert _trial([(0.0, _audio(1.0)), (0.1, _done("completed"))], [])["missed"]
    assert _trial([(0.0, _audio(1.0)), (0.1, _done("completed"))], [], began=None)["missed"]


def test_a_client_plays_each_chunk_after_the_ones_before_it_or_when_it_comes() -> None:
    assert played_out_at([]) == 0.0
    assert played_out_at([(0.0, 1.0), (0.1, 1.0)]) == 2.0  # came faster than it plays: queued
    assert played_out_at([(0.0, 1.0), (3.0, 0.5)]) == 3.5  # came after a gap: played as it came


@given(st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 3.0)), min_size=1, max_size=12))
def test_the_play_head_runs_out_when_the_latest_start_plays_all_that_came_from_it(
        steps: list[tuple[float, float]]) -> None:
    """Chunks read ``gap`` s after the one before, ``seconds`` long: all is played when the last stretch the
    client played without a break is, which starts at some chunk's arrival and plays it and all after it."""
    chunks, at = [], 0.0
    for gap, seconds in steps:
        at += gap
        chunks.append((at, seconds))
    stretches = [start + sum(s for _, s in chunks[i:]) for i, (start, _) in enumerate(chunks)]
    assert abs(played_out_at(chunks) - max(stretches)) < 1e-6
