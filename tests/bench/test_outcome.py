"""Answered, unanswered and double-answered turns, read from synthetic event logs; and when a turn is over."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest

from speech_to_speech.bench.audio import Speech
from speech_to_speech.bench.mic import Said
from speech_to_speech.bench.outcome import outcome, quiet
from speech_to_speech.bench.turns import LATENCY, summarize_turns, turn_sample
from speech_to_speech.pipeline.messages.turn_taking import TurnDecision
from speech_to_speech.protocol import TURN_DETECTION_KEY
from speech_to_speech.realtime.conversation.response_metadata import encode_turn_decision
from speech_to_speech.testing.realtime_client import Received


def created(rid: str) -> dict[str, Any]:
    return {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}


def delta(rid: str, ms: float = 20.0) -> dict[str, Any]:
    pcm = np.zeros(int(24000 * ms / 1000), dtype="<i2").tobytes()
    return {"type": "response.output_audio.delta", "response_id": rid, "delta": base64.b64encode(pcm).decode()}


def said(rid: str, text: str) -> dict[str, Any]:
    return {"type": "response.output_audio_transcript.done", "response_id": rid, "transcript": text}


def done(rid: str, status: str = "completed", details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "response.done", "response": {"id": rid, "status": status, "status_details": details}}


def heard(text: str) -> dict[str, Any]:
    return {"type": "conversation.item.input_audio_transcription.completed", "transcript": text}


SPEECH = [{"type": "input_audio_buffer.speech_started"}, {"type": "input_audio_buffer.speech_stopped"}]
CANCELLED = {"type": "cancelled", "reason": "turn_detected"}


def log(*events: dict[str, Any], start: float = 10.0) -> list[Received]:
    """The events read 0.1 s apart from ``start``."""
    return [Received(event, start + index / 10) for index, event in enumerate(events)]


def test_a_completed_response_with_audio_answers_the_turn() -> None:
    result = outcome(log(*SPEECH, created("r1"), heard("what time is it"), delta("r1"), delta("r1", 40),
                         said("r1", "It is noon."), done("r1")))
    assert result.answered and not result.double
    assert result.heard == ("what time is it",)
    answer = result.answer
    assert answer is not None
    assert (answer.id, answer.status, answer.transcript, answer.ending) == ("r1", "completed", "It is noon.",
                                                                            "completed")
    assert answer.audio_ms == 60.0 and answer.first_audio_at == 10.4  # the first delta's read time


def test_a_response_cancelled_before_any_audio_leaves_the_turn_unanswered() -> None:
    result = outcome(log(*SPEECH, created("r1"), done("r1", "cancelled", CANCELLED)))
    assert not result.answered and result.answer is None and result.audio_responses == 0
    (response,) = result.responses
    assert response.ending == "cancelled: turn_detected"


def test_silent_or_failed_responses_do_not_answer_and_say_why() -> None:
    failed = {"type": "failed", "error": {"type": "server_error", "message": "LLM crashed"}}
    result = outcome(log(created("r1"), done("r1"), created("r2"), delta("r2"), done("r2", "failed", failed)))
    assert not result.answered
    assert [r.ending for r in result.responses] == ["completed", "failed: LLM crashed"]
    assert result.audio_responses == 1 and not result.double


def test_an_incomplete_response_the_user_heard_is_an_answer() -> None:
    result = outcome(log(created("r1"), delta("r1"), done("r1", "incomplete", {"reason": "max_output_tokens"})))
    assert result.answered and result.responses[0].ending == "incomplete: max_output_tokens"


def test_two_responses_with_audio_are_a_double_answer() -> None:
    # A false start (cut off by the user going on) and then the real answer: the user heard both.
    result = outcome(log(*SPEECH, created("r1"), delta("r1"), {"type": "input_audio_buffer.speech_started"},
                         done("r1", "cancelled", CANCELLED), {"type": "input_audio_buffer.speech_stopped"},
                         created("r2"), delta("r2"), done("r2")))
    assert result.double and result.audio_responses == 2
    assert result.answer is not None and result.answer.id == "r2"  # the cancelled one did not answer


def test_the_answer_timed_is_the_first_begun_after_the_end_of_speech() -> None:
    # r1 answered the first sentence (its audio read at 10.1) and was not cut; r2 (10.4) answered the whole.
    result = outcome(log(created("r1"), delta("r1"), done("r1"), created("r2"), delta("r2"), done("r2")))
    assert result.double
    assert [r.id for r in (result.answer, result.answer_after(10.2), result.answer_after(None),
                           result.answer_after(11.0))] == ["r1", "r2", "r1", "r1"]  # none after 11.0: the first
    sample = turn_sample(clip(), Said(clip(), sent={"last_voiced": 10.2}), result, None)
    assert sample[LATENCY] == pytest.approx(200.0)  # not -100 ms, from the false start


def with_output(event: dict[str, Any], *item_ids: str) -> dict[str, Any]:
    event["response"]["output"] = [{"id": item_id, "type": "message"} for item_id in item_ids]
    return event


def deleted(item_id: str) -> dict[str, Any]:
    return {"type": "conversation.item.deleted", "item_id": item_id}


def test_a_reply_the_server_took_back_is_no_double_answer_and_no_answer_and_says_what_was_heard() -> None:
    # r1 started on the first sentence (audio read at 10.3 and 10.4, 60 ms of it), was cancelled when the
    # user went on and its item deleted at 10.7; r2 answered the whole request.
    result = outcome(log(created("r1"), delta("r1"), delta("r1", 40), {"type": "input_audio_buffer.speech_started"},
                         with_output(done("r1", "cancelled", CANCELLED), "item_r1"), deleted("item_r1"),
                         created("r2"), delta("r2"), with_output(done("r2"), "item_r2")))
    first, second = result.responses
    assert first.taken_back and not second.taken_back
    assert result.taken_back == 1 and result.audio_responses == 2 and not result.double
    assert result.answer is not None and result.answer.id == "r2"
    assert first.heard_ms == 60.0 and second.heard_ms is None  # all its audio was read before the deletion
    # Deleted 0.1 s after its first delta: no more than 100 ms of its 1 s could have played.
    long = outcome(log(created("r1"), delta("r1", 1000), deleted("item_r1"), with_output(done("r1"), "item_r1")))
    assert long.responses[0].heard_ms == pytest.approx(100.0)


def test_a_completed_reply_taken_back_is_not_the_answer_and_a_deletion_of_another_item_takes_nothing() -> None:
    taken = outcome(log(created("r1"), delta("r1"), with_output(done("r1"), "item_r1"), deleted("item_r1")))
    assert not taken.answered and taken.taken_back == 1
    other = outcome(log(created("r1"), delta("r1"), with_output(done("r1"), "item_r1"), deleted("item_user")))
    assert other.answered and other.taken_back == 0 and other.responses[0].heard_ms is None
    # Two taken back and the answer: one sample; the summary counts them and how much of each was heard.
    three = outcome(log(created("r1"), delta("r1"), with_output(done("r1", "cancelled", CANCELLED), "i1"),
                        deleted("i1"), created("r2"), delta("r2", 40), with_output(done("r2"), "i2"), deleted("i2"),
                        created("r3"), delta("r3"), with_output(done("r3"), "i3")))
    sample = turn_sample(clip(), Said(clip(), sent={"last_voiced": 10.05}), three, None)
    assert sample["answered"] and not sample["double"] and sample["taken_back"] == 2
    assert [r.get("heard_ms") for r in sample["responses"]] == [20.0, 40.0, None]
    summary = summarize_turns([{"repeat": 0, **sample}])
    assert summary["taken_back"] == 2 and summary["taken_back_heard_ms"]["n"] == 2
    assert summary["taken_back_heard_ms"]["max"] == 40.0


def test_a_turn_is_quiet_once_speech_and_responses_closed_and_nothing_came_for_the_settle_time() -> None:
    answered = log(*SPEECH, created("r1"), delta("r1"), done("r1"))  # last read at 10.4
    assert not quiet(answered, since=10.0, now=11.0, settle_s=1.0)
    assert quiet(answered, since=10.0, now=11.4, settle_s=1.0)
    assert not quiet(answered, since=11.0, now=11.4, settle_s=1.0)  # the request was still being said
    assert not quiet(answered[:3], since=10.0, now=99.0, settle_s=1.0)  # r1 is still open
    assert not quiet(answered[:1], since=10.0, now=99.0, settle_s=1.0)  # the user is still speaking
    assert quiet([], since=10.0, now=11.0, settle_s=1.0)  # nothing heard at all


def clip() -> Speech:
    return Speech("ask.wav", "ask", np.zeros(24000, np.float32), 24000, 2400, 21600)


def test_a_sample_times_the_answer_from_the_end_of_speech_and_the_summary_counts_turns() -> None:
    mic = Said(clip(), sent={"last_voiced": 10.05})
    answered = turn_sample(clip(), mic, outcome(log(*SPEECH, created("r1"), delta("r1"), done("r1"))), None)
    assert answered[LATENCY] == 250.0  # first delta read at 10.3
    assert answered["answered"] and answered["responses"][0]["ending"] == "completed"
    assert answered["speech_ms"] == 800.0
    double = turn_sample(clip(), mic, outcome(log(created("r1"), delta("r1"), done("r1", "cancelled", CANCELLED),
                                                  created("r2"), delta("r2"), done("r2"))), None)
    double["heard"] = ["So I was thinking that", "we could go out."]  # a pause taken for the end of the turn
    unanswered = turn_sample(clip(), mic, outcome(log(created("r1"), done("r1", "cancelled", CANCELLED))),
                             "the turn was still open")
    assert LATENCY not in unanswered and unanswered["error"] == "the turn was still open"
    samples = [{"repeat": 0, **s} for s in (answered, double, unanswered)]
    summary = summarize_turns(samples)
    assert (summary["requests"], summary["answered"], summary["double_answers"], summary["errors"]) == (3, 2, 1, 1)
    assert summary["answered_rate"] == 0.667
    assert summary["split_requests"] == 1
    assert summary["unanswered"] == ["ask.wav (repeat 0)"]
    assert summary["not_completed"] == {"cancelled: turn_detected": 2}
    assert summary[LATENCY]["n"] == 2


def decided(rid: str, outcome_: str, probability: float | None = 0.91) -> dict[str, Any]:
    """A completed ``response.done`` carrying the decision the server encodes (timings extension)."""
    decision = TurnDecision("item_1", "smart-turn", outcome_, probability, 48.5, words="so I was thinking.",
                            continuation=0.4321)
    event = done(rid)
    event["response"]["metadata"] = {TURN_DETECTION_KEY: encode_turn_decision(decision)}
    return event


def test_each_response_records_what_the_turn_detector_decided_and_the_summary_counts_the_outcomes() -> None:
    mic = Said(clip(), sent={"last_voiced": 10.05})
    # A request split at its pause: the first end timed out, the second sounded finished.
    split = turn_sample(clip(), mic, outcome(log(*SPEECH, created("r1"), delta("r1"), decided("r1", "timed_out"),
                                                 *SPEECH, created("r2"), delta("r2"), decided("r2", "finished"))),
                        None)
    assert split["responses"][0]["turn_detection"] == {
        "detector": "smart-turn", "outcome": "timed_out", "probability": 0.91, "inference_ms": 48.5,
        "words": "so I was thinking.", "continuation": 0.4321}
    whole = turn_sample(clip(), mic, outcome(log(*SPEECH, created("r1"), delta("r1"), decided("r1", "finished"))),
                        None)
    # A response the detector did not open (or a server without the extension) records None.
    other = turn_sample(clip(), mic, outcome(log(created("r1"), delta("r1"), done("r1"))), None)
    assert other["responses"][0]["turn_detection"] is None
    summary = summarize_turns([{"repeat": 0, **s} for s in (split, whole, other)])
    assert summary["turn_outcomes"] == {"finished": 2, "timed_out": 1}


def test_an_undecodable_turn_decision_is_kept_as_it_came() -> None:
    event = done("r1")
    event["response"]["metadata"] = {TURN_DETECTION_KEY: "not json"}
    (response,) = outcome(log(created("r1"), event)).responses
    assert response.turn_detection == {"raw": "not json"}
