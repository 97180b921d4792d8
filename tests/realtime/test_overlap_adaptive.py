"""The adaptive overlap policy over the wire: speech over the answer is judged by its words (docs/sessions.md).

The scripted VAD hears a loud tone as speech and the scripted STT says what
each utterance is ("Yeah." or "Stop."), for every pass on it: the probe the
judge asks for as the speech starts, and the final transcript.
"""

from __future__ import annotations

from typing import Any

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.protocol import Event
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.turns.listener_words import LISTENER_CAP

from .conftest import ServerFactory

RATE = 24000
LONG_REPLY = " ".join(f"Clause number {n} goes on, and on." for n in range(1, 11))
SLOW: dict[str, Any] = {"scripted_token_delay_ms": 15.0, "scripted_tts_ms_per_char": 20.0}
ADAPTIVE = {"overlap_policy": "adaptive"}
REMARK_S, LONG_S = 0.4, 2.0


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


async def _answering(client: RealtimeTestClient, session: dict[str, Any] | None) -> str:
    """Configure the session, speak a turn and read until its answer's audio arrives: its response id."""
    if session is not None:
        await client.update_session(session)
    await client.append_audio(spoken_turn(RATE), RATE)
    events = await client.collect_until("response.output_audio.delta")
    return str(next(e for e in events if e["type"] == "response.created")["response"]["id"])


async def _remark_over_answer(make_server: ServerFactory, words: str, session: dict[str, Any] | None,
                              speech_s: float = REMARK_S) -> tuple[str, list[Event]]:
    server = make_server(scripted_transcripts=["Tell me a long story.", words],
                         scripted_replies=[LONG_REPLY, "Never said."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story = await _answering(client, session)
        await client.append_audio(spoken_turn(RATE, speech_s=speech_s), RATE)
        events = await client.collect_until(_done(story))
        events += await client.barrier()
    return story, events


async def test_a_listener_word_over_the_answer_is_acknowledged_and_the_answer_plays_on(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    story, events = await _remark_over_answer(make_server, "Yeah.", ADAPTIVE)

    done = next(e for e in events if _done(story)(e))
    assert done["response"]["status"] == "completed" and _transcript(done) == LONG_REPLY
    [decision] = _decisions(events)
    assert (decision["policy"], decision["action"], decision["reason"]) == ("adaptive", "acknowledge", "backchannel")
    assert decision["metadata"]["response_id"] == story and decision["metadata"]["transcript"] == "Yeah."
    assert 0 < decision["metadata"]["overlap_ms"] < 1200
    # Nothing of the remark reaches the client: no turn started, no item, no transcript, no answer.
    kinds = types(events)
    assert not [k for k in kinds if k.startswith("input_audio_buffer.") or "input_audio_transcription" in k]
    assert "response.created" not in kinds and "conversation.item.added" not in kinds
    assert len(llm_requests) == 1


async def test_a_default_session_acknowledges_a_listener_word_without_telling_the_stock_client(
        make_server: ServerFactory) -> None:
    story, events = await _remark_over_answer(make_server, "Mm-hmm, I see.", None)

    done = next(e for e in events if _done(story)(e))
    assert done["response"]["status"] == "completed" and _transcript(done) == LONG_REPLY
    assert _decisions(events) == []  # it never chose a policy: no event type it does not know
    assert "input_audio_buffer.speech_started" not in types(events)


async def test_a_laugh_without_words_is_acknowledged(make_server: ServerFactory) -> None:
    story, events = await _remark_over_answer(make_server, "(laughs)", ADAPTIVE)

    [decision] = _decisions(events)
    assert (decision["action"], decision["reason"]) == ("acknowledge", "backchannel")
    assert next(e for e in events if _done(story)(e))["response"]["status"] == "completed"


async def test_a_real_interruption_cancels_the_answer_as_soon_as_its_words_are_heard(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Stop, what time is it?"],
                         scripted_replies=[LONG_REPLY, "It is noon."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story = await _answering(client, ADAPTIVE)
        # In real time, as a microphone sends it: the words are heard long before 1200 ms are voiced.
        await client.append_audio(spoken_turn(RATE, speech_s=LONG_S), RATE, pace=1.0)
        events = await client.collect_until(_done(status="completed"))

    kinds = types(events)
    [decision] = _decisions(events)
    assert (decision["action"], decision["reason"]) == ("barge_in", "interruption")
    # Decided on the first pass, a quarter second in: long before the cap, and while the user still speaks.
    assert decision["metadata"]["overlap_ms"] < 1200
    cancelled_at = next(i for i, e in enumerate(events) if _done(story, "cancelled")(e))
    assert events[cancelled_at]["response"]["status_details"]["reason"] == "turn_detected"
    assert (kinds.index("overlap.decision") < cancelled_at < kinds.index("input_audio_buffer.speech_started")
            < kinds.index("input_audio_buffer.speech_stopped"))
    assert _transcript(events[-1]) == "It is noon."
    assert "Stop, what time is it?" in str(llm_requests[-1].messages[-1].content)


async def test_listener_words_voiced_past_the_cap_barge_in(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Yeah, yeah, yeah."],
                         scripted_replies=[LONG_REPLY, "Go on then."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story = await _answering(client, {**ADAPTIVE, "overlap_barge_in_ms": 600})
        await client.append_audio(spoken_turn(RATE, speech_s=LONG_S), RATE)
        events = await client.collect_until(_done(status="completed"))

    [decision] = _decisions(events)
    assert (decision["action"], decision["reason"]) == ("barge_in", "long_overlap_speech")
    # At the cap if no pass had come back yet, at the listener's longer cap if one had (the audio arrives faster
    # than real time, so either may come first). On a loaded machine the VAD's count of the voice may reach the
    # judge only with the utterance's end; the reason still says the voice, not the words, decided it.
    assert 600 <= decision["metadata"]["overlap_ms"] <= LONG_S * 1000 + 100
    assert 600 * LISTENER_CAP < LONG_S * 1000
    assert any(_done(story, "cancelled")(e) for e in events)


async def test_barge_in_on_speech_still_cancels_at_the_first_sound(make_server: ServerFactory) -> None:
    story, events = await _remark_over_answer(make_server, "Yeah.", {"overlap_policy": "barge_in_on_speech"})

    [decision] = _decisions(events)
    assert (decision["policy"], decision["action"], decision["reason"]) == (
        "barge_in_on_speech", "barge_in", "speech_started")
    assert next(e for e in events if _done(story)(e))["response"]["status"] == "cancelled"


async def test_speech_after_an_acknowledged_remark_is_a_turn_of_its_own(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Okay.", "What is the time?"],
                         scripted_replies=[LONG_REPLY, "It is noon."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story = await _answering(client, ADAPTIVE)
        await client.append_audio(spoken_turn(RATE, speech_s=REMARK_S), RATE)
        await client.wait_for(lambda e: e["type"] == "overlap.decision")
        await client.append_audio(spoken_turn(RATE, speech_s=0.8), RATE)
        events = await client.collect_until(_done(status="completed"))

    decisions = [(d["action"], d["metadata"].get("transcript")) for d in _decisions(events)]
    assert decisions == [("barge_in", "What is the time?")]
    assert any(_done(story, "cancelled")(e) for e in events)
    assert _transcript(events[-1]) == "It is noon."


async def test_speech_right_after_the_user_s_own_turn_is_them_going_on_and_is_not_held(
        make_server: ServerFactory) -> None:
    """Within --take_back_within_ms of the turn just answered: the user goes on ("… in Paris"), no remark."""
    server = make_server(scripted_transcripts=["Tell me a long story.", "Yeah, about a dog."],
                         scripted_replies=[LONG_REPLY, "A dog story."], take_back_within_ms=5000, **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        story = await _answering(client, ADAPTIVE)
        await client.append_audio(spoken_turn(RATE, speech_s=REMARK_S), RATE)
        events = await client.collect_until(_done(status="completed"))

    [decision] = _decisions(events)
    assert (decision["action"], decision["reason"]) == ("barge_in", "speech_started")
    assert "transcript" not in decision["metadata"]  # decided before any word was heard
    assert any(_done(story, "cancelled")(e) for e in events)


async def _sent_answer(client: RealtimeTestClient) -> Event:
    """Speak a turn (adaptive) and read until its answer is sent in full: its response.done. The scripted TTS
    makes the answer's audio at once, so a client playing it on arrival still has seconds of it to play."""
    await _answering(client, ADAPTIVE)
    return await client.wait_for(_done(status="completed"))


async def test_a_listener_word_while_a_sent_answer_still_plays_is_acknowledged(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    """Over WebSocket the client plays the answer after its response.done: speech while its audio still plays
    (by the clock of what was sent) is judged as speech over the answer, a remark and a question alike."""
    server = make_server(scripted_transcripts=["Tell me a long story.", "Yeah.", "What is the time?"],
                         scripted_replies=[LONG_REPLY, "It is noon."], scripted_tts_ms_per_char=30.0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await _sent_answer(client)
        await client.append_audio(spoken_turn(RATE, speech_s=REMARK_S), RATE)
        events = [await client.wait_for("overlap.decision")]
        await client.append_audio(spoken_turn(RATE, speech_s=0.8), RATE)
        events += await client.collect_until(_done(status="completed"))

    decisions = [(d["action"], d["metadata"]["response_id"], d["metadata"].get("transcript"))
                 for d in _decisions(events)]
    # No response is active: only the answer's audio was still going (as over WebRTC's track).
    assert decisions == [("acknowledge", None, "Yeah."), ("barge_in", None, "What is the time?")]
    assert types(events).count("input_audio_buffer.speech_started") == 1  # the question's, not the remark's
    assert _transcript(events[-1]) == "It is noon."
    assert len(llm_requests) == 2


async def test_speech_after_the_client_stopped_playing_is_a_turn_as_it_comes(make_server: ServerFactory) -> None:
    """A client that truncated the answer (it stopped playing there) is not talked over: nothing is judged."""
    server = make_server(scripted_transcripts=["Tell me a long story.", "Yeah."],
                         scripted_replies=[LONG_REPLY, "Good."], scripted_tts_ms_per_char=30.0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        item_id = (await _sent_answer(client))["response"]["output"][0]["id"]
        await client.send("conversation.item.truncate", item_id=item_id, content_index=0, audio_end_ms=800)
        await client.wait_for("conversation.item.truncated")
        await client.append_audio(spoken_turn(RATE, speech_s=REMARK_S), RATE)
        events = await client.collect_until(_done(status="completed"))

    assert _decisions(events) == []
    assert "input_audio_buffer.speech_started" in types(events)
    assert _transcript(events[-1]) == "Good."


STORY = "Once upon a time there was a lighthouse, and its keeper kept a seagull that had lost its way home."


async def test_a_client_that_acks_it_is_behind_is_still_talked_over(make_server: ServerFactory) -> None:
    """Its playback.ack moves the play head back from the send clock's (a jitter buffer): a remark after the
    sent audio would have played out, but before the client played it, is still judged over the answer."""
    server = make_server(scripted_transcripts=["Tell me a story.", "Yeah."],
                         scripted_replies=[STORY, "Never said."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        done = (await _sent_answer(client))["response"]
        await client.hear_out()  # by the send clock, the answer has played out
        # The client has played 50 ms of it: over a second is still to play, far past the answer's end.
        await client.send("playback.ack", response_id=done["id"], item_id=done["output"][0]["id"], played_ms=50)
        await client.wait_for("playback.acknowledged")
        await client.append_audio(spoken_turn(RATE, speech_s=REMARK_S), RATE)
        decision = await client.wait_for("overlap.decision")
        events = await client.barrier()

    assert (decision["action"], decision["metadata"]["transcript"]) == ("acknowledge", "Yeah.")
    assert "response.created" not in types(events)


async def test_speech_as_the_answer_s_last_words_play_is_the_next_turn(make_server: ServerFactory) -> None:
    """People take the turn a little before it ends: speech reported with no more than ANSWER_END_S of the
    answer left to play is a turn as it comes, even a remark's words."""
    server = make_server(scripted_transcripts=["Is it raining?", "Okay."], scripted_replies=["It is.", "Good."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await _sent_answer(client)  # 60 ms of audio: its last moments still play as the user speaks
        await client.append_audio(spoken_turn(RATE, speech_s=REMARK_S), RATE)
        events = await client.collect_until(_done(status="completed"))

    assert _decisions(events) == []  # no overlap to decide
    assert "input_audio_buffer.speech_started" in types(events) and _transcript(events[-1]) == "Good."
