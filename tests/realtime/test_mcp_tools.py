"""MCP servers named in a session: listed once, called by the server inside a response, the answer spoken.

Real MCP servers on loopback (the ``mcp-server-time`` package's over HTTP and
SSE through :mod:`speech_to_speech.testing.mcp_server`, ours over stdio via
``--mcp_server``) and the scripted LLM emitting the call. Every event is
validated against the GA schema by the test client.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.testing.mcp_server import serving, time_server, tools_server
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

TOKYO_CALL = '<tool_call>get_current_time {"timezone": "Asia/Tokyo"}</tool_call>'
# The follow-up reply repeats the whole history the model was given, so the test sees the tool's result in it.
ANSWER = "Here is what I found: {history}"


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


@pytest.fixture(scope="module")
def time_url() -> Iterator[str]:
    with serving(time_server(), "streamable_http") as url:
        yield url


def mcp_tool(url: str, **fields: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "clock", "server_url": url, "require_approval": "never", **fields}


async def listed(client: RealtimeTestClient, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Update the session with ``tools`` and return the events up to the end of the listing."""
    await client.update_session({"tools": tools})
    return await client.collect_until(
        lambda e: e["type"] == "conversation.item.done" and e["item"]["type"] == "mcp_list_tools")


async def shop_response(ws_url: str) -> list[dict[str, Any]]:
    """One response in a fresh session whose tools are our MCP server's (``shop``): its events to the end."""
    with serving(tools_server()) as url:
        async with RealtimeTestClient.connect(ws_url) as client:
            await client.wait_for("session.created")
            await listed(client, [mcp_tool(url, server_label="shop")])
            await client.send("response.create")
            return await client.response_cycle()


async def test_time_server_over_http_answers_tokyo(
        make_server: ServerFactory, time_url: str, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=[TOKYO_CALL, ANSWER])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        listing = await listed(client, [mcp_tool(time_url)])
        await client.send("response.create")
        events = await client.response_cycle()
    kinds = types(listing)
    assert kinds.index("mcp_list_tools.in_progress") < kinds.index("mcp_list_tools.completed")
    item = listing[-1]["item"]
    assert item["server_label"] == "clock"
    assert {tool["name"] for tool in item["tools"]} == {"get_current_time", "convert_time"}
    # The model was given the listed tools beside the function tools.
    assert "get_current_time" in {tool["name"] for tool in llm_requests[0].tools}

    done = events[-1]["response"]
    assert done["status"] == "completed"
    output_types = [item["type"] for item in done["output"]]
    assert output_types == ["message", "mcp_call", "message"]  # preamble, the call, the spoken answer
    call = done["output"][1]
    assert call["name"] == "get_current_time" and json.loads(call["arguments"]) == {"timezone": "Asia/Tokyo"}
    assert call["error"] is None and json.loads(call["output"])["timezone"] == "Asia/Tokyo"
    kinds = types(events)
    for kind in ("response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
                 "response.mcp_call.in_progress", "response.mcp_call.completed"):
        assert kind in kinds
    assert kinds.index("response.mcp_call.completed") < kinds.index("response.output_audio.delta",
                                                                        kinds.index("response.mcp_call.completed"))
    # The answer was asked with the result in the model's history, under the same response.
    follow_up = llm_requests[-1]
    assert follow_up.response_id == done["id"] and len(llm_requests) == 2
    results = [m for m in follow_up.messages if m.role == "tool"]
    assert len(results) == 1 and "Asia/Tokyo" in results[0].content
    answer = done["output"][2]["content"][0]["transcript"]
    assert "Asia/Tokyo" in answer


async def test_tools_are_listed_once_per_session(make_server: ServerFactory, time_url: str) -> None:
    server = make_server(scripted_replies=["Fine."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await listed(client, [mcp_tool(time_url)])
        await client.update_session({"tools": [mcp_tool(time_url)], "instructions": "Be brief."})
        await client.send("response.create")
        events = await client.response_cycle()
    assert "mcp_list_tools.in_progress" not in types(events)


async def test_sse_transport_and_allowed_tools(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=["Fine."])
    with serving(time_server(), "sse") as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            listing = await listed(client, [mcp_tool(url, allowed_tools=["convert_time"])])
            await client.send("response.create")
            await client.response_cycle()
    assert "mcp_list_tools.completed" in types(listing)
    assert [tool["name"] for tool in llm_requests[0].tools] == ["convert_time"]


async def test_headers_reach_the_server_and_are_never_echoed(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["Fine."])
    secret = "Bearer s3cret-token"
    with serving(time_server(), require_header=("Authorization", secret)) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.send("session.update", session={"type": "realtime", "tools": [
                mcp_tool(url, headers={"Authorization": secret})]})
            updated = await client.wait_for("session.updated")
            listing = await client.collect_until("mcp_list_tools.completed")
            # Without the header, the server refuses: the listing fails, with an error, and nothing hangs.
            await client.send("session.update", session={"type": "realtime", "tools": [
                mcp_tool(url, server_label="clock2")]})
            refused = await client.collect_until("mcp_list_tools.failed")
            error = await client.wait_for("error")
    assert secret not in json.dumps(updated) and secret not in json.dumps(listing)
    assert updated["session"]["tools"][0]["headers"] == {"Authorization": "[redacted]"}
    assert "mcp_list_tools.failed" in types(refused)
    assert error["error"]["code"] == "mcp_list_tools_failed" and "401" in error["error"]["message"]


async def test_local_stdio_server_from_the_flag(make_server: ServerFactory) -> None:
    command = f"{sys.executable} -m speech_to_speech.testing.mcp_server"
    server = make_server(mcp_server=[f"shop={command}"],
                         scripted_replies=['<tool_call>look_up_order {"order_number": "55"}</tool_call>', ANSWER])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        # Offered to every session, listed when it starts: a stock client names nothing.
        await client.wait_for("mcp_list_tools.completed", timeout=30)
        await client.send("response.create")
        events = await client.response_cycle()
    done = events[-1]["response"]
    call = next(item for item in done["output"] if item["type"] == "mcp_call")
    assert call["server_label"] == "shop" and "Friday" in call["output"]
    assert "Friday" in done["output"][-1]["content"][0]["transcript"]


async def test_a_failing_tool_is_a_failed_call_and_a_spoken_recovery(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["<tool_call>broken_tool {}</tool_call>", "Sorry, that failed: {history}"])
    events = await shop_response(server.ws_url)
    assert "response.mcp_call.failed" in types(events)
    done = events[-1]["response"]
    assert done["status"] == "completed"
    call = next(item for item in done["output"] if item["type"] == "mcp_call")
    assert call["output"] is None and call["error"]["type"] == "tool_execution_error"
    assert "unreachable" in call["error"]["message"]
    assert "unreachable" in done["output"][-1]["content"][0]["transcript"]  # the model was told, and spoke


async def test_a_server_that_is_down_fails_the_listing_not_the_turn(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["I cannot reach that service right now."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"tools": [mcp_tool("http://127.0.0.1:9/mcp")]})
        failed = await client.collect_until("mcp_list_tools.failed")
        await client.send("response.create")
        events = await client.response_cycle()
    assert "mcp_list_tools.in_progress" in types(failed)
    assert events[-1]["response"]["status"] == "completed"


async def test_stock_function_tools_still_work_beside_mcp(make_server: ServerFactory, time_url: str) -> None:
    server = make_server(scripted_replies=['<tool_call>get_weather {"city": "Paris"}</tool_call>'])
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}, mcp_tool(time_url)]
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await listed(client, tools)
        await client.send("response.create")
        events = await client.response_cycle()
    assert "response.function_call_arguments.done" in types(events)
    assert [item["type"] for item in events[-1]["response"]["output"]][-1] == "function_call"


async def test_the_time_server_over_stdio_from_the_flag_answers_tokyo(make_server: ServerFactory) -> None:
    command = f"{sys.executable} -m mcp_server_time --local-timezone UTC"
    server = make_server(mcp_server=[f"time={command}"], scripted_replies=[TOKYO_CALL, ANSWER])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        listing = await client.wait_for(lambda e: e["type"] == "conversation.item.done"
                                        and e["item"]["type"] == "mcp_list_tools", timeout=30)
        await client.send("response.create")
        events = await client.response_cycle()
    assert listing["item"]["server_label"] == "time"
    done = events[-1]["response"]
    call = next(item for item in done["output"] if item["type"] == "mcp_call")
    assert call["server_label"] == "time" and json.loads(call["output"])["timezone"] == "Asia/Tokyo"
    assert "Asia/Tokyo" in done["output"][-1]["content"][0]["transcript"]


async def test_an_mcp_tool_given_to_one_response_only(
        make_server: ServerFactory, time_url: str, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=[TOKYO_CALL, ANSWER, "Plain."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("response.create", response={"tools": [mcp_tool(time_url)]})
        events = await client.response_cycle()  # the listing comes first, inside the wait
        await client.send("response.create")
        await client.response_cycle()
    kinds = types(events)
    assert kinds.index("mcp_list_tools.completed") < kinds.index("response.mcp_call.completed")
    assert json.loads(events[-1]["response"]["output"][1]["output"])["timezone"] == "Asia/Tokyo"
    assert "get_current_time" not in {tool["name"] for tool in llm_requests[-1].tools}  # the session has none
