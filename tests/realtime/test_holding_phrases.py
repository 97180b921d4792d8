"""After the preamble, no long dead air, over the wire: holding phrases while a slow tool runs or a call is
written, then the answer whole; none after a cancel or speech over the wait, none with preambles off, at
most two a response (realtime/tools/holding.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from speech_to_speech.realtime.tools.holding import MAX_HOLDS
from speech_to_speech.realtime.tools.preamble import HOLDING, PHRASES
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.mcp_server import serving, tools_server
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory
from .test_mcp_tools import listed, mcp_tool
from .test_tool_waits import ORDER_CALL, phrases_then_answer, transcripts

RATE = 24000
ANSWER = "It arrives on Friday."
# A quiet of 1 s (the floor: 3 x 50 ms is less) before each holding phrase: the waits below are longer.
QUICK = {"preamble_after_ms": 50}
ORDER_TOOL = [{"type": "function", "name": "look_up_order", "parameters": {"type": "object"}}]


def said_events(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(event type, transcript text) of the spoken text and the call's milestones, in order."""
    marks = ("response.mcp_call.in_progress", "response.mcp_call.completed", "response.done")
    return [(e["type"], e.get("delta", "")) for e in events
            if e["type"] == "response.output_audio_transcript.delta" or e["type"] in marks]


async def test_a_slow_mcp_tool_gets_holding_phrases_then_the_whole_answer(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[ORDER_CALL, ANSWER])
    with serving(tools_server(delay_s=4.0)) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.update_session(QUICK)
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.send("response.create")
            events = await client.response_cycle()
    done = events[-1]["response"]
    assert [item["type"] for item in done["output"]] == ["message", "mcp_call", "message"]
    preamble, answer = transcripts(done)
    assert preamble.strip() in PHRASES["en"]
    _, held, rest = phrases_then_answer(answer)
    # Four seconds of tool after a 1 s quiet each: as many as a response may have, and the answer after them.
    assert len(held) == MAX_HOLDS and rest == ANSWER
    assert held[0] == HOLDING["en"][0] and len(set(held)) == len(held)  # "Still checking.", then another
    order = said_events(events)
    running = order.index(("response.mcp_call.in_progress", ""))
    completed = order.index(("response.mcp_call.completed", ""))
    during = "".join(text for _, text in order[running:completed])
    assert during.split() == " ".join(held).split()  # said while the tool ran, not after it
    kinds = types(events)
    assert "response.output_audio.delta" in kinds[kinds.index("response.mcp_call.completed"):]


async def test_a_quick_tool_gets_the_preamble_alone(make_server: ServerFactory) -> None:
    # The default 1 s preamble wait makes a 3 s quiet before a holding phrase: a 0.5 s tool is answered first.
    server = make_server(scripted_replies=[ORDER_CALL, ANSWER])
    with serving(tools_server(delay_s=0.5)) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.send("response.create")
            done = (await client.response_cycle())[-1]["response"]
    said = transcripts(done)
    assert said[0].strip() in PHRASES["en"] and said[1] == ANSWER


async def test_preambles_off_means_no_holding_phrases_either(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[ORDER_CALL, ANSWER])
    with serving(tools_server(delay_s=2.5)) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.update_session({"preamble_after_ms": None})
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.send("response.create")
            done = (await client.response_cycle())[-1]["response"]
    assert [item["type"] for item in done["output"]] == ["mcp_call", "message"]
    assert transcripts(done) == [ANSWER]


async def test_a_call_written_slowly_gets_holding_phrases_and_its_answer_goes_on_with_them(
        make_server: ServerFactory) -> None:
    # The model takes 4 s to write a function call (the 1.5B on a busy machine): the preamble, then holding
    # phrases, then the call. The client answers it, and the answer to its response.create is slow to start
    # too: for the user it is the same wait, so that response says holding phrases, not a second preamble.
    server = make_server(scripted_replies=["[[pause:4000]]" + ORDER_CALL, "[[pause:3000]]" + ANSWER])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"tools": ORDER_TOOL, **QUICK})
        await client.send("response.create")
        first = (await client.response_cycle())[-1]["response"]
        call = first["output"][-1]
        await client.send("conversation.item.create", item={
            "type": "function_call_output", "call_id": call["call_id"], "output": "arrives on Friday"})
        await client.send("response.create")
        second = (await client.response_cycle())[-1]["response"]
    assert [item["type"] for item in first["output"]] == ["message", "function_call"]
    preambles, held, rest = phrases_then_answer(transcripts(first)[0])
    assert len(preambles) == 1 and len(held) == MAX_HOLDS and rest == ""
    preambles, held, rest = phrases_then_answer(transcripts(second)[0])
    assert not preambles and 1 <= len(held) <= MAX_HOLDS and rest == ANSWER


async def test_a_slow_client_tool_is_bridged_as_soon_as_its_answer_s_response_opens(
        make_server: ServerFactory) -> None:
    # The client's tool takes 3.5 s, more than the 3 s quiet (the default preamble_after_ms): no response is
    # open meanwhile, so nothing can be said; the answer's response says a holding phrase at once, though its
    # model starts within the 1 s a new response waits before its preamble.
    server = make_server(scripted_replies=[ORDER_CALL, "[[pause:600]]" + ANSWER])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"tools": ORDER_TOOL})
        await client.send("response.create")
        first = (await client.response_cycle())[-1]["response"]
        await asyncio.sleep(3.5)  # the client's slow tool
        await client.send("conversation.item.create", item={
            "type": "function_call_output", "call_id": first["output"][-1]["call_id"], "output": "Friday"})
        await client.send("response.create")
        second = (await client.response_cycle())[-1]["response"]
    assert transcripts(first)[0].strip() in PHRASES["en"]
    preambles, held, rest = phrases_then_answer(transcripts(second)[0])
    assert not preambles and len(held) == 1 and rest == ANSWER


async def test_an_answer_to_a_client_s_tool_after_the_user_spoke_is_a_new_wait(make_server: ServerFactory) -> None:
    # Text the client adds after the tool's output is a new turn: its response waits for a first word as any
    # other (the preamble after preamble_after_ms), not as the call's wait going on.
    server = make_server(scripted_replies=[ORDER_CALL, "[[pause:1500]]" + ANSWER])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"tools": ORDER_TOOL, **QUICK})
        await client.send("response.create")
        first = (await client.response_cycle())[-1]["response"]
        await client.send("conversation.item.create", item={
            "type": "function_call_output", "call_id": first["output"][-1]["call_id"], "output": "Friday"})
        await client.send("conversation.item.create", item={
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "And when?"}]})
        await client.send("response.create")
        second = (await client.response_cycle())[-1]["response"]
    preambles, held, rest = phrases_then_answer(transcripts(second)[0])
    assert len(preambles) == 1 and len(held) <= MAX_HOLDS and rest == ANSWER


async def test_nothing_is_said_after_a_cancel_during_the_wait(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["<tool_call>hang {}</tool_call>", "Next answer."])
    with serving(tools_server()) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.update_session(QUICK)
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.send("response.create")
            await client.wait_for("response.mcp_call.in_progress")
            await client.send("response.cancel")
            cancelled = (await client.collect_until("response.done"))[-1]["response"]
            await asyncio.sleep(2.5)  # more than two holding phrases' quiet
            after = await client.barrier()
    assert cancelled["status"] == "cancelled"
    assert all(t.strip() in PHRASES["en"] for t in transcripts(cancelled))  # the preamble alone
    assert not [e for e in after if e.get("response_id") == cancelled["id"]
                or e["type"].startswith("response.output_audio")]


async def test_nothing_is_said_after_the_user_speaks_over_the_wait(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Where is order 55?", "Never mind."],
                         scripted_replies=[ORDER_CALL, "Okay."])
    with serving(tools_server(delay_s=6.0)) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.update_session(QUICK)
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.append_audio(spoken_turn(RATE), RATE)
            await client.wait_for("response.mcp_call.in_progress")
            await client.append_audio(spoken_turn(RATE), RATE)  # the user speaks while the tool runs
            spoken_over = (await client.wait_for("response.done"))["response"]
            rest = await client.collect_until(lambda e: e["type"] == "response.done", timeout=10)
            await asyncio.sleep(2.5)
            rest += await client.barrier()
    assert spoken_over["status_details"]["reason"] == "turn_detected"
    assert not [e for e in rest if e.get("response_id") == spoken_over["id"]]
    answer = rest[[e["type"] for e in rest].index("response.done")]["response"]
    assert transcripts(answer) == ["Okay."]  # the next answer, with no phrase of the old wait in it


async def test_holding_phrases_are_in_the_language_the_user_speaks(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["[fr] Où en est la commande 55 ?"],
                         scripted_replies=[ORDER_CALL, "Elle arrive vendredi."])
    with serving(tools_server(delay_s=2.5)) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.update_session(QUICK)
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.append_audio(spoken_turn(RATE), RATE)
            done = (await client.wait_for("response.done", timeout=15))["response"]
    preamble, answer = transcripts(done)
    assert preamble.strip() in PHRASES["fr"]
    holding = answer.removesuffix("Elle arrive vendredi.").strip()
    assert holding and all(sentence + "." in HOLDING["fr"] for sentence in holding.rstrip(".").split(". "))
