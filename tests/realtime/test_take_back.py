"""A reply taken back when the user goes on with the request right after the turn ended, over the wire.

The real Silero VAD and Smart Turn model on recorded speech (the hibari
voice), scripted STT, LLM and TTS; the scripted reply ``{history}`` says every
message the LLM was asked, so the second answer shows what the model was told.
"""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.pipeline.messages.input_audio import SpeechStarted
from speech_to_speech.pipeline.messages.turn_taking import TurnDecision
from speech_to_speech.realtime.conversation.response import ResponseState
from speech_to_speech.realtime.conversation.take_back import may_take_back
from speech_to_speech.testing.client_audio import silence
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory
from .test_semantic_turns import MAX_TURN_SILENCE_MS, RATE, SLOW_SILENCE_MS, semantic, speech, until_quiet

QUESTION = "What is twelve times fifteen?"
# Silence between the two utterances: long enough for the first turn to end and its reply to start on
# a slow machine, and inside the window the server is given.
GAP_S = 1.0


def server_with_window(make_server: ServerFactory, window_ms: int) -> Any:
    return make_server(vad="silero", min_silence_ms=SLOW_SILENCE_MS, max_turn_silence_ms=MAX_TURN_SILENCE_MS,
                       take_back_within_ms=window_ms, scripted_transcripts=[QUESTION],
                       scripted_replies=["{history} and so on, and so on, for a good while yet."],
                       scripted_token_delay_ms=40)


async def two_utterances(client: RealtimeTestClient) -> list[dict[str, Any]]:
    await client.update_session(semantic())
    clip = speech("finished_twelve_fifteen")
    await client.append_audio(np.concatenate([clip, silence(GAP_S, RATE), clip, silence(1.2, RATE)]), RATE,
                              pace=1.0)
    return await until_quiet(client)


def done(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["response"] for e in events if e["type"] == "response.done"]


def replies(events: list[dict[str, Any]]) -> list[str]:
    return [e["transcript"] for e in events if e["type"] == "response.output_audio_transcript.done"]


async def test_speech_soon_after_a_turn_takes_its_reply_back_and_the_next_answer_hears_both(
        make_server: ServerFactory) -> None:
    server = server_with_window(make_server, window_ms=int(GAP_S * 1000) + 400)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        events = await two_utterances(client)
        first, second = done(events)
        first_items = [item["id"] for item in first["output"]]
        deleted = [e["item_id"] for e in events if e["type"] == "conversation.item.deleted"]
        assert first_items and deleted == first_items
        assert any(e["type"] == "response.output_audio.delta" and e["response_id"] == first["id"] for e in events)
        # The client truncates the reply it was playing, as stock SDKs do on speech_started: no error.
        await client.send("conversation.item.truncate", item_id=first_items[0], content_index=0, audio_end_ms=100)
        await client.send("conversation.item.retrieve", item_id=first_items[0])
        answer = await client.wait_for("error")
        # The one error is the retrieve's: the item is gone, and its truncate was accepted.
        assert answer["error"]["code"] == "conversation_item_not_found", answer
    assert first["status"] in ("cancelled", "completed")
    assert second["status"] == "completed"
    # The second answer was asked both utterances as the user's, and nothing of the first reply.
    asked = replies(events)[-1]
    assert asked.startswith(f"user: {QUESTION} | user: {QUESTION} and so on") and "assistant:" not in asked
    assert 's2s_replies_taken_back_total 1.0' in (await metrics(server))


async def test_speech_after_the_window_keeps_the_reply_and_the_next_answer_follows_it(
        make_server: ServerFactory) -> None:
    server = server_with_window(make_server, window_ms=int(GAP_S * 1000) - 500)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        events = await two_utterances(client)
    assert not any(e["type"] == "conversation.item.deleted" for e in events)
    asked = replies(events)[-1]
    assert asked.startswith(f"user: {QUESTION} | assistant: user: {QUESTION} and so on")
    assert 's2s_replies_taken_back_total 0.0' in (await metrics(server))


@pytest.mark.parametrize(("window_ms", "interrupt_response"), [(0, True), (600, False)])
async def test_a_reply_that_cannot_be_taken_back_waits_out_a_pause_between_sentences(
        make_server: ServerFactory, window_ms: int, interrupt_response: bool) -> None:
    # Without take-back (off on the server, or the session does not let speech interrupt), a finished
    # turn waits 448 ms: a 420 ms pause inside the request ends no turn, and one reply answers the whole.
    server = make_server(vad="silero", min_silence_ms=SLOW_SILENCE_MS, max_turn_silence_ms=MAX_TURN_SILENCE_MS,
                         take_back_within_ms=window_ms, scripted_transcripts=[QUESTION],
                         scripted_replies=["{history}"])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.update_session(semantic(interrupt_response=interrupt_response))
        clip = speech("finished_twelve_fifteen")
        await client.append_audio(np.concatenate([clip, silence(0.42, RATE), clip, silence(1.2, RATE)]), RATE,
                                  pace=1.0)
        events = await until_quiet(client)
    kinds = [e["type"] for e in events]
    assert kinds.count("input_audio_buffer.speech_stopped") == 1, kinds
    assert len(done(events)) == 1 and "conversation.item.deleted" not in kinds


async def metrics(server: Any) -> str:
    async with httpx.AsyncClient() as http:
        return (await http.get(server.http_url + "/metrics")).text


# ------------------------------------------------------------ the rule, exhaustively

def answer(turn_item_id: str | None, outcome: str | None, tool_call: bool = False) -> ResponseState:
    response = ResponseState(id="resp_1", generation=1, conversation_id="conv_1", turn_item_id=turn_item_id)
    if outcome is not None:
        response.turn_decision = TurnDecision(item_id=turn_item_id, detector="smart-turn", outcome=outcome)
    response.output.append({"id": "item_a", "type": "message"})
    if tool_call:
        response.output.append({"id": "item_b", "type": "function_call"})
    return response


@given(silence_ms=st.one_of(st.none(), st.integers(0, 3000)), within_ms=st.integers(0, 3000),
       interrupt=st.booleans(), same_turn=st.booleans(),
       outcome=st.sampled_from([None, "finished", "timed_out", "disputed", "no_answer"]), tool_call=st.booleans())
def test_a_reply_is_taken_back_exactly_when_every_condition_holds(silence_ms: int | None, within_ms: int,
                                                                  interrupt: bool, same_turn: bool,
                                                                  outcome: str | None, tool_call: bool) -> None:
    speech_started = SpeechStarted(0, interrupt_response=interrupt, item_id="item_new",
                                   after_item_id="item_turn" if silence_ms is not None else None,
                                   after_silence_ms=silence_ms)
    response = answer("item_turn" if same_turn else "item_other", outcome, tool_call)
    expected = (silence_ms is not None and within_ms > 0 and silence_ms <= within_ms and interrupt and same_turn
                and outcome in ("finished", "disputed") and not tool_call)
    assert may_take_back(speech_started, response, within_ms) is expected
    assert may_take_back(speech_started, None, within_ms) is False
