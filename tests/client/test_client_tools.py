"""Client tools without a server: the call contract, and the scheduling rules on scripted events."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.client import ToolResult
from speech_to_speech.client.tool_scheduler import ToolCoordinator
from speech_to_speech.client.tools import ToolCaller, load_tool_module

from .client_harness import SentEvents, response_done

Event = dict[str, Any]
TOOLS = [
    {"type": "function", "name": "get_weather",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                    "additionalProperties": False}},
    {"type": "function", "name": "noop", "parameters": {"type": "object", "properties": {}}},
]


async def weather(name: str, arguments: dict[str, Any]) -> Any:
    return {"city": arguments["city"], "sky": "sunny"}


# ---------------------------------------------------------------- one call


async def call(executor: Any, name: str = "get_weather", arguments: str = '{"city": "Paris"}',
               default: bool = True) -> Any:
    return await ToolCaller(TOOLS, executor, default).call("c1", name, arguments)


async def test_a_valid_call_returns_its_json_output_and_asks_for_a_follow_up() -> None:
    outcome = await call(weather)
    assert (json.loads(outcome.output), outcome.create_response, outcome.error) == (
        {"city": "Paris", "sky": "sunny"}, True, False)


async def test_strings_go_back_unchanged_and_tool_result_overrides_the_default() -> None:
    async def fire_and_forget(name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult("done", create_response=False)

    async def speak(name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult({"celsius": 21.5}, create_response=True)

    quiet = await call(fire_and_forget)
    assert (quiet.output, quiet.create_response) == ("done", False)
    loud = await call(speak, default=False)
    assert (loud.output, loud.create_response) == ('{"celsius": 21.5}', True)
    plain = await call(weather, default=False)  # a plain value takes the module default
    assert plain.create_response is False


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("unknown_tool", "{}", "Unknown tool: unknown_tool"),
    ("get_weather", "{not json", "Invalid JSON arguments for get_weather"),
    ("get_weather", '{"town": "Paris"}', "Invalid arguments for get_weather"),
    ("get_weather", '{"city": 3}', "at city: 3 is not of type 'string'"),
])
async def test_bad_calls_become_error_outputs_before_the_tool_runs(name: str, arguments: str, message: str) -> None:
    ran: list[str] = []

    async def executor(name: str, arguments: dict[str, Any]) -> str:
        ran.append(name)
        return "ran"

    outcome = await call(executor, name, arguments, default=False)
    assert message in json.loads(outcome.output)["error"]
    assert outcome.error and outcome.create_response  # errors always ask for a recovery response
    assert ran == []


async def test_handler_failures_become_error_outputs() -> None:
    async def broken(name: str, arguments: dict[str, Any]) -> Any:
        raise RuntimeError("provider down")

    def not_awaitable(name: str, arguments: dict[str, Any]) -> Any:
        return {"sync": True}

    def raises_at_once(name: str, arguments: dict[str, Any]) -> Any:
        raise KeyError("city")

    async def unserializable(name: str, arguments: dict[str, Any]) -> Any:
        return {1, 2}

    for executor, message in [(broken, "RuntimeError: provider down"), (not_awaitable, "did not return an awaitable"),
                              (raises_at_once, "KeyError"), (unserializable, "not JSON-serializable")]:
        outcome = await call(executor, default=False)
        assert message in json.loads(outcome.output)["error"]
        assert outcome.create_response


async def test_an_object_with_async_call_is_an_executor() -> None:
    class Executor:
        async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
            return f"{name}:{arguments['city']}"

    assert (await call(Executor())).output == "get_weather:Paris"


def test_a_tool_module_provides_tools_executor_and_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "quiet_tools.py").write_text(
        "TOOLS = [{'name': 'dance', 'parameters': {'type': 'object'}}]\n"
        "CREATE_RESPONSE = False\n"
        "async def execute_tool(name, arguments):\n    return 'ok'\n"
    )
    (tmp_path / "broken_tools.py").write_text("TOOLS = 'nope'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = load_tool_module("quiet_tools")
    assert module.tools == [{"type": "function", "name": "dance", "parameters": {"type": "object"}}]
    assert module.create_response is False
    with pytest.raises(ValueError, match="TOOLS must be a list"):
        load_tool_module("broken_tools")
    with pytest.raises(ValueError, match="cannot import tool module"):
        load_tool_module("no_such_tools_module")
    sys.modules.pop("quiet_tools", None)
    sys.modules.pop("broken_tools", None)


# ---------------------------------------------------------------- scheduling


class Gate:
    """Tools that finish only when the test says so."""

    def __init__(self) -> None:
        self.release: dict[str, asyncio.Event] = {}
        self.started: list[str] = []
        self.cancelled: list[str] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        city = arguments.get("city", name)
        self.started.append(city)
        try:
            await self.release.setdefault(city, asyncio.Event()).wait()
        except asyncio.CancelledError:
            self.cancelled.append(city)
            raise
        return f"weather in {city}"

    def open(self, city: str) -> None:
        self.release.setdefault(city, asyncio.Event()).set()


class Harness(SentEvents):
    def __init__(self, executor: Any, default: bool = True) -> None:
        super().__init__()
        self.tools = ToolCoordinator(ToolCaller(TOOLS, executor, default), self._send)

    def feed(self, *events: Event) -> None:
        for event in events:
            self.tools.handle(event)

    async def settle(self) -> None:
        for _ in range(5):
            await asyncio.sleep(0)

    def outputs(self) -> list[str]:
        return [e["item"]["call_id"] for e in self.sent if e["type"] == "conversation.item.create"]

    def creates(self) -> list[list[str]]:
        return [json.loads(e["response"]["metadata"]["s2s_tool_followup_call_ids"])
                for e in self.sent if e["type"] == "response.create"]


async def answered_call(harness: Harness) -> str:
    """A Paris weather call in response r1, its output sent; the event id of the follow-up create."""
    harness.feed(*call_events("r1", 0, "c1", "Paris"), response_done("r1", output=[function_output("c1")]))
    await harness.settle()
    return str(harness.sent[-1]["event_id"])


def call_events(response_id: str, index: int, call_id: str, city: str, added: bool = True) -> list[Event]:
    item = {"type": "function_call", "call_id": call_id, "name": "get_weather", "arguments": ""}
    done = {"type": "response.function_call_arguments.done", "response_id": response_id, "output_index": index,
            "call_id": call_id, "name": "get_weather", "arguments": json.dumps({"city": city})}
    added_event = {"type": "response.output_item.added", "response_id": response_id, "output_index": index,
                   "item": item}
    return [added_event, done] if added else [done]


def function_output(call_id: str) -> Event:
    return {"type": "function_call", "call_id": call_id}


async def test_calls_run_concurrently_and_outputs_follow_output_index_order() -> None:
    gate = Gate()
    harness = Harness(gate)
    harness.feed({"type": "response.created", "response": {"id": "r1"}},
                 *call_events("r1", 1, "c1", "Paris"), *call_events("r1", 2, "c2", "Rome"))
    await harness.settle()
    assert gate.started == ["Paris", "Rome"]  # both running before either finished
    gate.open("Rome")
    await harness.settle()
    assert harness.outputs() == []  # c2 waits for c1, which comes first in the response
    gate.open("Paris")
    await harness.settle()
    assert harness.outputs() == ["c1", "c2"]  # submitted before the origin is done
    assert harness.creates() == []
    harness.feed(response_done("r1", output=[{"type": "message"}, function_output("c1"), function_output("c2")]))
    await harness.settle()
    assert harness.creates() == [["c1", "c2"]]  # exactly one follow-up, naming both


async def test_without_added_events_the_terminal_output_gives_the_order() -> None:
    gate = Gate()
    harness = Harness(gate)
    harness.feed(*call_events("r1", 0, "c1", "Paris", added=False), *call_events("r1", 1, "c2", "Rome", added=False))
    gate.open("Rome")
    await harness.settle()
    assert harness.outputs() == []  # order unknown until response.done
    harness.feed(response_done("r1", output=[function_output("c2"), function_output("c1")]))
    gate.open("Paris")
    await harness.settle()
    assert harness.outputs() == ["c2", "c1"]
    assert harness.creates() == [["c2", "c1"]]


@pytest.mark.parametrize("status", ["cancelled", "incomplete", "failed"])
async def test_an_origin_that_did_not_complete_cancels_unsubmitted_results(status: str) -> None:
    gate = Gate()
    harness = Harness(gate)
    harness.feed(*call_events("r1", 0, "c1", "Paris"), *call_events("r1", 1, "c2", "Rome"))
    gate.open("Paris")
    await harness.settle()
    harness.feed(response_done("r1", status))
    await harness.settle()
    assert gate.cancelled == ["Rome"]
    assert harness.outputs() == ["c1"]  # what was already submitted stays
    assert harness.creates() == [] and not harness.tools.busy


async def answered_while_the_user_speaks() -> Harness:
    """A call whose result comes in after the user started speaking (item u2)."""
    gate = Gate()
    harness = Harness(gate)
    harness.feed(*call_events("r1", 0, "c1", "Paris"), response_done("r1", output=[function_output("c1")]),
                 {"type": "input_audio_buffer.speech_started", "item_id": "u2"})
    gate.open("Paris")
    await harness.settle()
    return harness


async def test_the_follow_up_is_held_while_the_user_speaks_until_their_item_is_committed() -> None:
    harness = await answered_while_the_user_speaks()
    assert harness.outputs() == ["c1"]  # submitted while the user speaks
    assert harness.creates() == []  # but the follow-up waits
    harness.feed({"type": "input_audio_buffer.committed", "item_id": "u2"})
    assert harness.creates() == [["c1"]]


async def test_a_completed_answer_that_consumed_the_result_suppresses_the_follow_up() -> None:
    harness = await answered_while_the_user_speaks()
    harness.feed({"type": "input_audio_buffer.committed", "item_id": "u2"})
    # The server answered the user (and the result) before our follow-up could be accepted.
    harness.feed({"type": "error", "error": {"code": "conversation_already_has_active_response", "event_id": "evt_2"}},
                 {"type": "response.created", "response": {"id": "r2"}})
    harness.feed(response_done("r2", output=[{"type": "message"}],
                               metadata={"s2s_tool_input_call_ids": '["c1"]'}))
    assert harness.creates() == [["c1"]]  # the one rejected attempt; nothing after the suppression
    assert not harness.tools.busy


@pytest.mark.parametrize("status", ["cancelled", "failed"])
async def test_answers_that_did_not_complete_do_not_suppress(status: str) -> None:
    harness = Harness(weather)
    harness.feed({"type": "response.created", "response": {"id": "r2"}}, *call_events("r1", 0, "c1", "Paris"))
    harness.feed(response_done("r1", output=[function_output("c1")]))
    await harness.settle()
    assert harness.creates() == []  # r2 is active
    harness.feed(response_done("r2", status, output=[{"type": "message"}],
                               metadata={"s2s_tool_input_call_ids": '["c1"]'}))
    assert harness.creates() == [["c1"]]


async def test_an_empty_completed_answer_does_not_suppress() -> None:
    harness = Harness(weather)
    harness.feed({"type": "response.created", "response": {"id": "r2"}}, *call_events("r1", 0, "c1", "Paris"),
                 response_done("r1", output=[function_output("c1")]))
    await harness.settle()
    harness.feed(response_done("r2", output=[], metadata={"s2s_tool_input_call_ids": '["c1"]'}))
    assert harness.creates() == [["c1"]]


async def test_tool_followup_already_answered_counts_as_done() -> None:
    harness = Harness(weather)
    create_id = await answered_call(harness)
    assert harness.creates() == [["c1"]]
    harness.feed({"type": "error", "error": {"code": "tool_followup_already_answered", "event_id": create_id}})
    harness.feed({"type": "input_audio_buffer.committed"}, response_done("r9"))
    assert harness.creates() == [["c1"]] and not harness.tools.busy


async def test_user_input_pending_retries_after_the_transcript() -> None:
    harness = Harness(weather)
    create_id = await answered_call(harness)
    harness.feed({"type": "error", "error": {"code": "tool_followup_user_input_pending", "event_id": create_id}})
    harness.feed({"type": "input_audio_buffer.committed", "item_id": "u2"})
    assert len(harness.creates()) == 1  # still waiting for the user's transcript
    harness.feed({"type": "conversation.item.input_audio_transcription.completed", "item_id": "u2",
                  "transcript": ""})
    assert harness.creates() == [["c1"], ["c1"]]


async def test_fire_and_forget_results_need_no_follow_up_but_errors_do() -> None:
    quiet = Harness(weather, default=False)
    quiet.feed(*call_events("r1", 0, "c1", "Paris"), response_done("r1", output=[function_output("c1")]))
    await quiet.settle()
    assert quiet.outputs() == ["c1"] and quiet.creates() == []
    failing = Harness(weather, default=False)
    failing.feed({"type": "response.function_call_arguments.done", "response_id": "r1", "call_id": "c1",
                  "name": "get_weather", "arguments": "{broken"}, response_done("r1", output=[function_output("c1")]))
    await failing.settle()
    assert failing.creates() == [["c1"]]
    assert "error" in json.loads(failing.sent[0]["item"]["output"])


async def test_close_cancels_outstanding_handlers() -> None:
    gate = Gate()
    harness = Harness(gate)
    harness.feed(*call_events("r1", 0, "c1", "Paris"))
    await harness.settle()
    await asyncio.wait_for(harness.tools.close(), 5)
    assert gate.cancelled == ["Paris"]
    assert harness.outputs() == []


async def test_an_accepted_follow_up_is_not_sent_again() -> None:
    harness = Harness(weather)
    await answered_call(harness)
    metadata = harness.sent[-1]["response"]["metadata"]
    harness.feed({"type": "response.created", "response": {"id": "r2", "metadata": metadata}},
                 response_done("r2", "cancelled", metadata=metadata), response_done("r3"))
    assert harness.creates() == [["c1"]] and not harness.tools.busy


async def test_a_busy_server_gets_the_follow_up_after_its_response_unless_that_answered_it() -> None:
    harness = Harness(weather)
    create_id = await answered_call(harness)
    # An automatic response started first (it echoes no follow-up metadata) and our create was refused.
    harness.feed({"type": "response.created", "response": {"id": "auto", "metadata": None}},
                 {"type": "error", "error": {"code": "conversation_already_has_active_response",
                                             "event_id": create_id}})
    harness.feed(response_done("auto", output=[{"type": "message"}]))  # its input did not include c1
    assert harness.creates() == [["c1"], ["c1"]]
