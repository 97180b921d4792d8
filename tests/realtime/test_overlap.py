"""The overlap policy over the wire: what the user's speech over a speaking assistant does (docs/sessions.md).

The scripted (energy) VAD hears a loud tone as speech, so the length of the
tone is the length of the overlap on the VAD's audio clock: 0.3 s is a
backchannel under the default thresholds (700 / 1200 ms), 0.9 s is deferred,
2 s barges in. Audio goes out as fast as the socket takes it, so the whole
overlap is heard while the slow scripted reply is still being spoken.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.audio.wav import read_wav
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.protocol import Event
from speech_to_speech.protocol.overlap_decisions import (
    ACKNOWLEDGE,
    ACTIONS,
    BARGE_IN,
    INTERRUPT_DISABLED,
    LONG_OVERLAP,
    REASONS,
)
from speech_to_speech.realtime.conversation.overlap import Overlap, Thresholds, decide
from speech_to_speech.realtime.wire.session_model import MAX_THRESHOLD_MS
from speech_to_speech.testing.client_audio import silence, spoken_turn, tone
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

RATE = 24000
# 80 tokens at 15 ms: the answer is still being spoken for over a second, long enough to talk over.
LONG_REPLY = " ".join(f"Clause number {n} goes on, and on." for n in range(1, 11))
SLOW: dict[str, Any] = {"scripted_token_delay_ms": 15.0, "scripted_tts_ms_per_char": 20.0}
LISTEN_ONLY = {"overlap_policy": "listen_only"}
BACKCHANNEL_S, DEFERRED_S, LONG_S = 0.3, 0.9, 2.0


def _decisions(events: list[Event]) -> list[Event]:
    return [e for e in events if e["type"] == "overlap.decision"]


def _done(response_id: str | None = None, status: str | None = None) -> Any:
    def match(event: Event) -> bool:
        response = event.get("response") or {}
        return (event["type"] == "response.done" and response_id in (None, response["id"])
                and status in (None, response["status"]))
    return match


def _transcript(done: Event) -> str:
    return str(done["response"]["output"][0]["content"][0]["transcript"])


async def _answering(client: RealtimeTestClient, session: dict[str, Any] | None) -> tuple[str, list[Event]]:
    """Configure the session, speak a turn and read until its answer's audio arrives: (response id, events)."""
    if session is not None:
        await client.update_session(session)
    await client.append_audio(spoken_turn(RATE), RATE)
    events = await client.collect_until("response.output_audio.delta")
    created = next(e for e in events if e["type"] == "response.created")
    return str(created["response"]["id"]), events


async def _speak_over(client: RealtimeTestClient, speech_s: float) -> None:
    await client.append_audio(spoken_turn(RATE, speech_s=speech_s), RATE)


async def test_a_backchannel_shorter_than_the_short_ack_threshold_neither_cancels_nor_gets_an_answer(
        make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Mm-hmm."],
                         scripted_replies=[LONG_REPLY, "Never said."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story, _ = await _answering(client, LISTEN_ONLY)
        await _speak_over(client, BACKCHANNEL_S)
        events = await client.collect_until(_done(story))
        if "conversation.item.input_audio_transcription.completed" not in types(events):
            events += await client.collect_until("conversation.item.input_audio_transcription.completed")
        events += await client.barrier()

    done = next(e for e in events if _done(story)(e))
    assert done["response"]["status"] == "completed"
    assert _transcript(done) == LONG_REPLY
    [decision] = _decisions(events)
    assert decision["policy"] == "listen_only"
    assert (decision["action"], decision["reason"]) == ("acknowledge", "short_backchannel")
    assert 0 < decision["metadata"]["overlap_ms"] < 700
    assert decision["metadata"]["response_id"] == story
    assert decision["session_id"]
    # The backchannel is kept in the conversation as a user item, and nothing answers it.
    user = next(e for e in events if e["type"] == "conversation.item.input_audio_transcription.completed")
    assert user["transcript"] == "Mm-hmm." and user["item_id"] == decision["metadata"]["item_id"]
    assert "response.created" not in types(events)


async def test_a_long_overlap_cancels_the_response_while_the_user_still_speaks(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Wait, I have a question about that."],
                         scripted_replies=[LONG_REPLY, "Go ahead."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story, _ = await _answering(client, LISTEN_ONLY)
        await _speak_over(client, LONG_S)
        events = await client.collect_until(_done(status="completed"))

    kinds = types(events)
    [decision] = _decisions(events)
    assert (decision["action"], decision["reason"]) == ("barge_in", "long_overlap_speech")
    assert 1200 <= decision["metadata"]["overlap_ms"] < LONG_S * 1000
    at = kinds.index("overlap.decision")
    cancelled_at = next(i for i, e in enumerate(events) if _done(story, "cancelled")(e))
    assert events[cancelled_at]["response"]["status_details"]["reason"] == "turn_detected"
    # Not at the first sound (listen_only waits), and not at the end: once 1200 ms were voiced.
    assert kinds.index("input_audio_buffer.speech_started") < at < cancelled_at
    assert cancelled_at < kinds.index("input_audio_buffer.speech_stopped")
    # The overlapping speech is the user's turn, and it is answered.
    assert _transcript(events[-1]) == "Go ahead."


async def test_an_overlap_between_the_thresholds_is_answered_after_the_response_ends(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "And then what?"],
                         scripted_replies=[LONG_REPLY, "Then it ended."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story, _ = await _answering(client, LISTEN_ONLY)
        await _speak_over(client, DEFERRED_S)
        events = await client.collect_until(_done(status="completed"))
        events += await client.collect_until(_done(status="completed"))

    [decision] = _decisions(events)
    assert (decision["action"], decision["reason"]) == ("defer", "overlap_deferred")
    assert 700 <= decision["metadata"]["overlap_ms"] < 1200
    finished = [e for e in events if e["type"] == "response.done"]
    assert finished[0]["response"]["id"] == story
    assert _transcript(finished[0]) == LONG_REPLY  # the story was not cut
    created = [e for e in events if e["type"] == "response.created"]
    assert len(created) == 1 and events.index(created[0]) > events.index(finished[0])
    assert _transcript(finished[1]) == "Then it ended."
    # The deferred words are the turn the second answer answers.
    assert llm_requests[-1].messages[-1].role == "user"
    assert "And then what?" in str(llm_requests[-1].messages[-1].content)


async def test_a_backchannel_is_not_answered_when_the_response_it_overlapped_ends_before_it(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    """The client cancels the answer mid-"mm-hmm": no response is active when it ends, and still none starts.

    Nor does a speculative request start on its words in the pause inside it.
    """
    server = make_server(scripted_transcripts=["Tell me a long story.", "Mm-hmm."],
                         scripted_replies=[LONG_REPLY, "Never said."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story, _ = await _answering(client, LISTEN_ONLY)
        await client.append_audio(tone(0.3, RATE), RATE)
        await client.wait_for("input_audio_buffer.speech_started")
        await client.send("response.cancel")
        await client.wait_for(_done(story, "cancelled"))
        # The end of the backchannel, in real time: the speculative pass on its final pause has its
        # words well before the silence ends the turn, when a response could take them up.
        await client.append_audio(spoken_turn(RATE, speech_s=0.1, silence_s=0.8, lead_s=0.15), RATE, pace=1.0)
        events = await client.collect_until("conversation.item.input_audio_transcription.completed")
        await asyncio.sleep(0.5)  # a request made on the pause would have reached the LLM by now
        events += await client.barrier()

    [decision] = _decisions(events)
    assert decision["action"] == "acknowledge"
    assert decision["metadata"]["overlap_ms"] < 700
    assert not [k for k in types(events) if k.startswith("response.")]
    assert len(llm_requests) == 1  # the story's: nothing was asked about the backchannel


async def test_barge_in_on_speech_reports_its_decision_to_a_client_that_chose_it(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Stop, please."],
                         scripted_replies=[LONG_REPLY, "Stopped."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        updated = await client.update_session({"overlap_policy": "barge_in_on_speech"})
        assert updated["session"]["overlap_policy"] == "barge_in_on_speech"
        story, _ = await _answering(client, None)
        await _speak_over(client, BACKCHANNEL_S)
        events = await client.collect_until(_done(status="completed"))

    kinds = types(events)
    [decision] = _decisions(events)
    assert decision["policy"] == "barge_in_on_speech"
    assert (decision["action"], decision["reason"]) == ("barge_in", "speech_started")
    assert decision["metadata"]["response_id"] == story
    cancelled_at = next(i for i, e in enumerate(events) if _done(story, "cancelled")(e))
    # Even a backchannel cancels at once: the decision, the cancelled answer, then speech_started.
    assert kinds.index("overlap.decision") < cancelled_at < kinds.index("input_audio_buffer.speech_started")
    assert _transcript(events[-1]) == "Stopped."


async def test_listen_only_lets_the_user_go_on_with_their_turn_before_the_answer_has_said_anything(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    # "What's the weather?" … "in Paris": an add-on before the first word of the answer is no backchannel.
    # Whether the first answer reached the model before it was cancelled is up to the threads (one still
    # waiting for its transcript, or still queued, is never asked), so the reply says what it was asked
    # rather than taking its place in a list of replies.
    server = make_server(scripted_transcripts=["What's the weather?", "In Paris."],
                         scripted_replies=["Answering: {heard}"],
                         scripted_token_delay_ms=1500.0, scripted_tts_ms_per_char=20.0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        # A model this slow gets a preamble (docs/sessions.md, "No dead air"): off, so nothing is said before
        # the user goes on.
        await client.update_session({**LISTEN_ONLY, "preamble_after_ms": None})
        await client.append_audio(spoken_turn(RATE), RATE)
        first = (await client.wait_for("response.created"))["response"]["id"]
        await _speak_over(client, BACKCHANNEL_S)
        events = await client.collect_until(_done(status="completed"))

    [decision] = _decisions(events)
    assert (decision["policy"], decision["action"], decision["reason"]) == (
        "listen_only", "barge_in", "response_not_started")
    assert decision["metadata"]["response_id"] == first
    assert any(_done(first, "cancelled")(e) for e in events)
    assert events[-1]["response"]["id"] != first and _transcript(events[-1]) == "Answering: In Paris."
    # The answer is to the whole turn: what was said before the add-on, then the add-on.
    assert [m.content for m in llm_requests[-1].messages if m.role == "user"] == ["What's the weather?", "In Paris."]


async def test_a_default_session_judges_by_words_barges_in_on_stop_and_is_told_nothing_new(
        make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Stop, please."],
                         scripted_replies=[LONG_REPLY, "Stopped."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        created = await client.wait_for("session.created")
        story, _ = await _answering(client, None)
        await _speak_over(client, BACKCHANNEL_S)
        events = await client.collect_until(_done(status="completed"))

    session = created["session"]
    assert (session["overlap_policy"], session["overlap_short_ack_ms"], session["overlap_barge_in_ms"]) == (
        "adaptive", 700, 1200)
    assert session["capabilities"]["overlap_policies"] == ["adaptive", "barge_in_on_speech", "listen_only"]
    assert _decisions(events) == []  # stock clients never chose a policy: no event type they do not know
    assert any(_done(story, "cancelled")(e) for e in events)


async def test_without_interrupt_response_a_long_overlap_is_deferred_not_barged_in(
        make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Wait, I have a question about that."],
                         scripted_replies=[LONG_REPLY, "Go ahead."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story, _ = await _answering(client, {**LISTEN_ONLY, "audio": {"input": {"turn_detection": {
            "type": "server_vad", "interrupt_response": False}}}})
        await _speak_over(client, LONG_S)
        events = await client.collect_until(_done(status="completed"))
        events += await client.collect_until(_done(status="completed"))

    [decision] = _decisions(events)
    assert (decision["action"], decision["reason"]) == ("defer", "interrupt_disabled")
    finished = [e for e in events if e["type"] == "response.done"]
    assert finished[0]["response"]["id"] == story and _transcript(finished[0]) == LONG_REPLY
    assert _transcript(finished[1]) == "Go ahead."


async def test_barge_in_on_speech_without_interrupt_response_reports_that_it_ignored_the_overlap(
        make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Mm-hmm."],
                         scripted_replies=[LONG_REPLY, "Next."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story, _ = await _answering(client, {"overlap_policy": "barge_in_on_speech", "audio": {"input": {
            "turn_detection": {"type": "server_vad", "interrupt_response": False}}}})
        await _speak_over(client, LONG_S)
        events = await client.collect_until(_done(story))

    [decision] = _decisions(events)
    assert (decision["action"], decision["reason"]) == ("ignore", "interrupt_disabled")
    assert events[-1]["response"]["status"] == "completed"


async def test_the_thresholds_are_session_fields_that_change_the_decision(make_server: ServerFactory) -> None:
    """With a 200 ms short-ack threshold, the 300 ms backchannel is deferred instead, and answered after."""
    server = make_server(scripted_transcripts=["Tell me a long story.", "Mm-hmm."],
                         scripted_replies=[LONG_REPLY, "You said mm-hmm."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        updated = await client.update_session({**LISTEN_ONLY, "overlap_short_ack_ms": 200,
                                               "overlap_barge_in_ms": 5000})
        assert (updated["session"]["overlap_short_ack_ms"], updated["session"]["overlap_barge_in_ms"]) == (200, 5000)
        await _answering(client, None)
        await _speak_over(client, BACKCHANNEL_S)
        events = await client.collect_until(_done(status="completed"))
        events += await client.collect_until(_done(status="completed"))

    [decision] = _decisions(events)
    assert decision["action"] == "defer"
    assert (decision["metadata"]["short_ack_ms"], decision["metadata"]["barge_in_ms"]) == (200, 5000)
    assert _transcript(events[-1]) == "You said mm-hmm."


async def test_invalid_overlap_fields_are_rejected_and_change_nothing(make_server: ServerFactory) -> None:
    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        for field, value in (("overlap_policy", "interrupt_always"), ("overlap_short_ack_ms", -1),
                             ("overlap_barge_in_ms", "1200"), ("overlap_barge_in_ms", True),
                             ("overlap_short_ack_ms", 600001)):
            event_id = await client.send("session.update", session={"type": "realtime", field: value})
            error = await client.wait_for("error")
            assert error["error"]["event_id"] == event_id
            assert error["error"]["type"] == error["error"]["code"] == "invalid_request_error"
            assert error["error"]["param"] == f"session.{field}"
        updated = await client.update_session({})
        assert updated["session"]["overlap_policy"] == "adaptive"
        assert (updated["session"]["overlap_short_ack_ms"], updated["session"]["overlap_barge_in_ms"]) == (700, 1200)


async def test_the_turn_detector_ending_a_backchannel_does_not_get_it_answered(make_server: ServerFactory) -> None:
    """semantic_vad, the real Silero VAD and Smart Turn: the detector ends the turn; the policy leaves it unanswered."""
    words = read_wav(Path(__file__).resolve().parents[1] / "fixtures" / "turns" / "finished_twelve_fifteen.wav",
                     RATE)[0]
    server = make_server(vad="silero", min_silence_ms=1500, max_turn_silence_ms=1200,
                         scripted_transcripts=["What is twelve times fifteen?"], scripted_replies=[LONG_REPLY],
                         scripted_token_delay_ms=40.0, scripted_tts_ms_per_char=20.0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({**LISTEN_ONLY, "audio": {"input": {"turn_detection": {"type": "semantic_vad"}}}})
        await client.append_audio(np.concatenate([words, silence(1.0, RATE)]), RATE, pace=1.0)
        story = (await client.wait_for("response.created"))["response"]["id"]
        await client.wait_for("response.output_audio.delta")
        # "What…": the first 400 ms of the question, spoken over the answer, then silence.
        await client.append_audio(np.concatenate([words[: int(0.4 * RATE)], silence(2.0, RATE)]), RATE, pace=1.0)
        events = await client.collect_until("conversation.item.input_audio_transcription.completed")
        events += await client.barrier()

    [decision] = _decisions(events)
    assert (decision["action"], decision["reason"]) == ("acknowledge", "short_backchannel")
    assert decision["metadata"]["response_id"] == story
    assert "input_audio_buffer.speech_stopped" in types(events)
    assert "response.created" not in types(events)
    # The detector judged both turns (the question's pause and the backchannel's).
    metrics = httpx.get(server.http_url + "/metrics").text
    judged = re.findall(r'^s2s_turn_decisions_total\{detector="smart-turn",outcome="\w+"\} (\d+)', metrics, re.M)
    assert sum(float(n) for n in judged) >= 2


# ---------------------------------------------------------------- the rule itself (hypothesis)

thresholds_ms = st.integers(min_value=0, max_value=MAX_THRESHOLD_MS)


@settings(max_examples=400, deadline=None)
@given(short_ack=thresholds_ms, barge_in=thresholds_ms, interrupt=st.booleans(),
       marks=st.lists(st.integers(min_value=0, max_value=MAX_THRESHOLD_MS + 1000), max_size=6),
       tail=st.integers(min_value=0, max_value=5000), length_known=st.booleans())
def test_every_overlap_gets_exactly_one_decision_and_cancels_iff_it_reaches_the_barge_in_threshold(
        short_ack: int, barge_in: int, interrupt: bool, marks: list[int], tail: int, length_known: bool) -> None:
    thresholds = Thresholds(short_ack, barge_in, interrupt)
    overlap = Overlap("item_1", "resp_1")
    progress = sorted(marks)  # the VAD's voiced span only grows
    final = (progress[-1] if progress else 0) + tail
    made = [overlap.ongoing(ms, thresholds) for ms in progress]
    made.append(overlap.end(final if length_known else None, thresholds))

    decisions = [d for d in made if d is not None]
    assert len(decisions) == 1 and overlap.decision == decisions[0]  # exactly one, kept
    decision = decisions[0]
    assert decision.action in ACTIONS and decision.reason in REASONS
    longest = max([*progress, final if length_known else 0])
    reached = any(ms >= barge_in for ms in progress) or (length_known and final >= barge_in)
    # Cancel iff the voiced span reached the barge-in threshold (and interruptions are on).
    assert (decision.action == BARGE_IN) == (reached and interrupt)
    # A decision taken while the user still speaks is a long one, taken the moment it was reached.
    if made[-1] is None:
        first = next(ms for ms in progress if ms >= barge_in)
        assert decision.overlap_ms == first and decision.reason in (LONG_OVERLAP, INTERRUPT_DISABLED)
    # A backchannel is only ever acknowledged, never cancelled: it ended short of both thresholds.
    if decision.action == ACKNOWLEDGE:
        assert length_known and final < short_ack and final < barge_in and longest == final
    if length_known and final < min(short_ack, barge_in):
        assert decision.action == ACKNOWLEDGE
    if not interrupt:
        assert decision.action != BARGE_IN


@settings(max_examples=200, deadline=None)
@given(ms=st.integers(min_value=0, max_value=MAX_THRESHOLD_MS), short_ack=thresholds_ms, barge_in=thresholds_ms)
def test_the_rule_is_the_same_whether_an_overlap_is_judged_while_it_goes_on_or_when_it_ends(
        ms: int, short_ack: int, barge_in: int) -> None:
    thresholds = Thresholds(short_ack, barge_in)
    early = decide(ms, thresholds, ended=False)
    late = decide(ms, thresholds, ended=True)
    assert late is not None
    assert early is None or early == late  # an early decision is never one the end would contradict
    assert (late.action == BARGE_IN) == (ms >= barge_in)
