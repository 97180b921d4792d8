"""No dead air and never wedged, over the wire: preambles, approvals, and every way a tool call can go wrong.

A reply that reaches a tool call with nothing said says a preamble first; a
model slow to its first token gets one after ``preamble_after_ms``; none
with ``preamble_after_ms: null``. A call that needs approval runs once the
client approves it, in a response of its own; a declined one is spoken
about. Cancel during a call, speech over it, a hung tool (the timeout) and
an approval for nothing each end in a defined state.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from typing import Any

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.realtime.tools.preamble import HOLDING, PHRASES
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.mcp_server import serving, tools_server
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory
from .test_mcp_tools import listed, mcp_tool, shop_response

RATE = 24000
ORDER_CALL = '<tool_call>look_up_order {"order_number": "55"}</tool_call>'
ENGLISH = set(PHRASES["en"])
ENGLISH_HOLDING = set(HOLDING["en"])


def transcripts(done: dict[str, Any]) -> list[str]:
    return [item["content"][0]["transcript"] for item in done["output"] if item["type"] == "message"]


def phrases_then_answer(transcript: str) -> tuple[list[str], list[str], str]:
    """A transcript cut into the server's preambles, then its holding phrases, then the rest (the answer)."""
    sentences = re.split(r"(?<=[.!?])\s+", transcript.strip())
    preambles = list(itertools.takewhile(ENGLISH.__contains__, sentences))
    held = list(itertools.takewhile(ENGLISH_HOLDING.__contains__, sentences[len(preambles):]))
    return preambles, held, " ".join(sentences[len(preambles) + len(held):])


async def test_a_function_call_with_nothing_said_gets_a_preamble(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[ORDER_CALL])
    tools = [{"type": "function", "name": "look_up_order", "parameters": {"type": "object"}}]
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"tools": tools})
        await client.send("response.create")
        with_preamble = (await client.response_cycle())[-1]["response"]
        await client.update_session({"preamble_after_ms": None})
        await client.send("response.create")
        without = (await client.response_cycle())[-1]["response"]
    assert [item["type"] for item in with_preamble["output"]] == ["message", "function_call"]
    assert transcripts(with_preamble)[0].strip() in ENGLISH
    assert [item["type"] for item in without["output"]] == ["function_call"]


async def test_a_slow_first_token_gets_a_preamble_then_the_answer(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["Paris is the capital."], scripted_token_delay_ms=400.0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"preamble_after_ms": 50})
        await client.send("response.create")
        events = await client.response_cycle()
    said = transcripts(events[-1]["response"])
    assert len(said) == 1
    first, _, rest = said[0].partition(". ")
    assert first + "." in ENGLISH and rest.strip() == "Paris is the capital."


async def test_a_turn_answered_by_its_speculation_gets_a_preamble_while_its_first_token_is_slow(
    make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]
) -> None:
    # The model starts at the pause (a speculation) and the turn's response adopts it: the wait for its
    # first word is the user's all the same.
    server = make_server(scripted_transcripts=["What is the capital of France?"], scripted_replies=["Paris."],
                         scripted_token_delay_ms=1500.0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"preamble_after_ms": 50})
        await client.append_audio(spoken_turn(RATE), RATE)
        done = await client.wait_for("response.done")
    assert len(llm_requests) == 1  # adopted, not asked again
    said = transcripts(done["response"])
    # A first token 1.5 s late may also get a holding phrase after the preamble (realtime/tools/holding.py).
    preambles, _, answer = phrases_then_answer(said[0])
    assert len(preambles) == 1 and answer == "Paris."


async def test_the_wait_before_a_preamble_is_counted_from_the_end_of_the_user_s_speech(
    make_server: ServerFactory,
) -> None:
    # Said at a live pace, the turn ends 800 ms after the speech: a 700 ms wait is over by then, and the
    # preamble goes out at once, ahead of a first token that takes 500 ms (which, were the wait counted from
    # the turn's end, would have come first).
    server = make_server(scripted_transcripts=["What is the capital of France?"], scripted_replies=["Paris."],
                         scripted_token_delay_ms=500.0, min_silence_ms=800, speculation_silence_ms=0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"preamble_after_ms": 700})
        await client.append_audio(spoken_turn(RATE, silence_s=1.2), RATE, chunk_ms=20, pace=1.0)  # a live mic
        done = await client.wait_for("response.done")
    first, _, rest = transcripts(done["response"])[0].partition(". ")
    assert first + "." in ENGLISH and rest.strip() == "Paris."


async def test_a_fast_reply_gets_no_preamble(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["Paris is the capital."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"preamble_after_ms": 5000})
        await client.send("response.create")
        events = await client.response_cycle()
    assert transcripts(events[-1]["response"]) == ["Paris is the capital."]


async def test_the_preamble_plays_while_a_slow_tool_runs(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[ORDER_CALL, "It arrives on Friday."])
    with serving(tools_server(delay_s=1.0)) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.send("response.create")
            events = await client.response_cycle()
    kinds = types(events)
    # Audio (the preamble) goes out before the call even starts, and the answer after its result.
    assert kinds.index("response.output_audio.delta") < kinds.index("response.mcp_call.in_progress")
    completed = kinds.index("response.mcp_call.completed")
    assert "response.output_audio.delta" in kinds[completed:]
    said = transcripts(events[-1]["response"])
    assert said[0].strip() in ENGLISH and said[-1] == "It arrives on Friday."


async def test_a_hung_tool_times_out_and_is_spoken_about(make_server: ServerFactory) -> None:
    server = make_server(mcp_call_timeout_s=0.5,
                         scripted_replies=["<tool_call>hang {}</tool_call>", "Sorry: {history}"])
    events = await shop_response(server.ws_url)
    assert "response.mcp_call.failed" in types(events)
    done = events[-1]["response"]
    call = next(item for item in done["output"] if item["type"] == "mcp_call")
    assert "did not answer within 0.5 s" in call["error"]["message"]
    assert done["status"] == "completed" and "did not answer" in transcripts(done)[-1]


async def test_cancel_during_a_call_stops_it(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["<tool_call>hang {}</tool_call>", "Next answer."])
    with serving(tools_server()) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.send("response.create")
            await client.wait_for("response.mcp_call.in_progress")
            await client.send("response.cancel")
            events = await client.collect_until("response.done")
            # The session goes on: the next response is answered.
            await client.send("response.create")
            after = await client.response_cycle()
    kinds = types(events)
    assert kinds.index("response.mcp_call.failed") < kinds.index("response.done")
    assert events[-1]["response"]["status_details"] == {"type": "cancelled", "reason": "client_cancelled"}
    assert after[-1]["response"]["status"] == "completed"


async def test_speech_over_a_call_keeps_its_result_for_the_next_answer(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["Where is order 55?", "And say it slowly."],
                         scripted_replies=[ORDER_CALL, "{history}"])
    with serving(tools_server(delay_s=1.5)) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.append_audio(spoken_turn(RATE), RATE)
            await client.wait_for("response.mcp_call.in_progress")
            await client.append_audio(spoken_turn(RATE), RATE)  # the user speaks while the tool runs
            cancelled = await client.wait_for("response.done")
            kept = await client.wait_for(lambda e: e["type"] == "conversation.item.done"
                                         and e["item"]["type"] == "mcp_call", timeout=10)
            await client.collect_until(lambda e: e["type"] == "response.done"
                                       and e["response"]["id"] != cancelled["response"]["id"], timeout=10)
    assert cancelled["response"]["status_details"]["reason"] == "turn_detected"
    assert "Friday" in kept["item"]["output"]
    # The result reached the model: in the answer to the user's next words, or in one of its own.
    assert any("Friday" in m.content for request in llm_requests[1:] for m in request.messages if m.role == "tool")


async def test_approval_runs_the_call_in_a_response_of_its_own(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[ORDER_CALL, "It arrives on Friday."])
    with serving(tools_server()) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await listed(client, [mcp_tool(url, server_label="shop", require_approval="always")])
            await client.send("response.create")
            first = (await client.response_cycle())[-1]["response"]
            request = next(item for item in first["output"] if item["type"] == "mcp_approval_request")
            await client.send("conversation.item.create", item={
                "type": "mcp_approval_response", "approval_request_id": request["id"], "approve": True})
            second = (await client.response_cycle())[-1]["response"]
    assert request["name"] == "look_up_order"
    assert not any(item["type"] == "mcp_call" for item in first["output"])
    call = next(item for item in second["output"] if item["type"] == "mcp_call")
    assert call["approval_request_id"] == request["id"] and "Friday" in call["output"]
    assert transcripts(second)[-1] == "It arrives on Friday."


async def test_a_declined_call_is_not_run_and_the_model_is_told(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=[ORDER_CALL, "Alright, I will not look it up."])
    with serving(tools_server()) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await listed(client, [mcp_tool(url, server_label="shop", require_approval={
                "never": {"tool_names": ["book_table"]}})])
            await client.send("response.create")
            first = (await client.response_cycle())[-1]["response"]
            request = next(item for item in first["output"] if item["type"] == "mcp_approval_request")
            await client.send("conversation.item.create", item={
                "type": "mcp_approval_response", "approval_request_id": request["id"], "approve": False,
                "reason": "not now"})
            second = (await client.response_cycle())[-1]["response"]
    assert not any(item["type"] == "mcp_call" for item in second["output"])
    told = [m.content for m in llm_requests[-1].messages if m.role == "tool"]
    assert told == ["The user declined this call: not now"]


async def test_an_approval_for_nothing_is_refused_with_the_event_id(make_server: ServerFactory) -> None:
    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        event_id = await client.send("conversation.item.create", item={
            "type": "mcp_approval_response", "approval_request_id": "mcpr_nope", "approve": True})
        error = await client.wait_for("error")
        await asyncio.sleep(0)
    assert error["error"]["code"] == "mcp_approval_request_not_found"
    assert error["error"]["event_id"] == event_id
