"""Client tools against the real server (scripted backends): the spoken round trip and the scheduling rules.

The scripted LLM turns ``<tool_call>name {json}</tool_call>`` into a real tool
call on the wire; the client under test runs the tools, submits the outputs
and decides about the follow-up. A scripted microphone lets each test speak
exactly when the rule it checks needs it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.audio.wav import read_wav
from speech_to_speech.client import RealtimeAudioClientConfig, SessionSummary, ToolResult, listen_and_play_realtime

from .client_harness import MS_PER_CHAR, EventLog, ScriptedMic, converse, kind, voiced_spans, write_turns
from .conftest import ServerFactory

Event = dict[str, Any]
WEATHER = [{"type": "function", "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def calls(*cities: str) -> str:
    return "".join(f'<tool_call>get_weather {{"city": "{city}"}}</tool_call>' for city in cities)


class Gate:
    """A tool executor whose calls finish when the test opens them."""

    def __init__(self) -> None:
        self.release: dict[str, asyncio.Event] = {}
        self.started: list[str] = []
        self.finished: list[str] = []
        self.cancelled: list[str] = []

    def _event(self, city: str) -> asyncio.Event:
        return self.release.setdefault(city, asyncio.Event())

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        city = arguments["city"]
        self.started.append(city)
        try:
            await self._event(city).wait()
        except asyncio.CancelledError:
            self.cancelled.append(city)
            raise
        self.finished.append(city)
        return {"city": city, "sky": "sunny"}

    def open(self, city: str) -> None:
        self._event(city).set()


def sent(summary: SessionSummary, kind_name: str) -> list[Event]:
    return [e for e in summary.sent if e["type"] == kind_name]


# ---------------------------------------------------------------- the round trip


def test_spoken_question_tool_call_tool_module_and_spoken_follow_up(
    make_server: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "weather_tools.py").write_text(
        "from speech_to_speech.api.openai_realtime.audio_client import ToolResult\n"
        f"TOOLS = {WEATHER!r}\n"
        "async def execute_tool(name, arguments):\n"
        "    return ToolResult({'city': arguments['city'], 'sky': 'sunny'}, create_response=True)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    acknowledgement, answer = "Let me check. ", "It is sunny in Paris."
    server = make_server(scripted_transcripts=["What is the weather in Paris?"],
                         scripted_replies=[acknowledgement + calls("Paris"), answer])
    config = RealtimeAudioClientConfig(url=server.ws_url, tool_module="weather_tools", show_transcript=False,
                                       input_wav=write_turns(tmp_path / "q.wav"), output_wav=tmp_path / "a.wav")
    summary = asyncio.run(asyncio.wait_for(listen_and_play_realtime(config), 60))

    origin, follow_up = summary.responses
    (call,) = [item for item in origin["output"] if item["type"] == "function_call"]
    assert (origin["status"], call["name"], json.loads(call["arguments"])) == (
        "completed", "get_weather", {"city": "Paris"})
    (output,) = sent(summary, "conversation.item.create")
    assert output["item"] == {"type": "function_call_output", "call_id": call["call_id"],
                              "output": '{"city": "Paris", "sky": "sunny"}'}
    (create,) = sent(summary, "response.create")
    assert create["response"]["metadata"] == {"s2s_tool_followup_call_ids": json.dumps([call["call_id"]])}
    assert follow_up["status"] == "completed"
    assert follow_up["metadata"]["s2s_tool_followup_call_ids"] == json.dumps([call["call_id"]])
    assert follow_up["metadata"]["s2s_tool_input_call_ids"] == json.dumps([call["call_id"]])
    assert follow_up["output"][0]["content"][0]["transcript"] == answer
    samples, rate = read_wav(tmp_path / "a.wav")
    assert voiced_spans(samples, rate) == [
        pytest.approx(len(acknowledgement.strip()) * MS_PER_CHAR / 1000, abs=0.03),
        pytest.approx(len(answer) * MS_PER_CHAR / 1000, abs=0.03),
    ]


# ---------------------------------------------------------------- scheduling rules


def test_calls_run_concurrently_and_outputs_keep_output_index_order(make_server: ServerFactory,
                                                                    tmp_path: Path) -> None:
    server = make_server(scripted_replies=[calls("Paris", "Rome"), "Both are sunny."])
    gate = Gate()

    async def script(mic: ScriptedMic, log: EventLog) -> None:
        mic.turn()
        await log.wait_for(kind("response.function_call_arguments.done"), count=2)
        while len(gate.started) < 2:  # both run at once, neither finished
            await asyncio.sleep(0.01)
        gate.open("Rome")
        while gate.finished != ["Rome"]:
            await asyncio.sleep(0.01)
        gate.open("Paris")
        await log.wait_for(kind("response.done", status="completed"), count=2)

    summary, log = asyncio.run(converse(server.ws_url, tmp_path, script, tools=WEATHER, tool_executor=gate))
    assert gate.finished == ["Rome", "Paris"]
    call_ids = [item["call_id"] for item in summary.responses[0]["output"] if item["type"] == "function_call"]
    created = [e["item"]["call_id"] for e in log.events
               if e["type"] == "conversation.item.created" and e["item"]["type"] == "function_call_output"]
    assert created == call_ids  # Paris (output_index 0) first, though Rome finished first
    assert summary.followups == [call_ids]


def test_a_cancelled_origin_cancels_the_unsubmitted_result(make_server: ServerFactory, tmp_path: Path) -> None:
    server = make_server(scripted_replies=["Let me check. " + calls("Paris") + " This may take a little while, "
                                           "so please bear with me for a moment.", "Okay."],
                         scripted_token_delay_ms=60)
    gate = Gate()

    async def script(mic: ScriptedMic, log: EventLog) -> None:
        mic.turn()
        await log.wait_for(kind("response.function_call_arguments.done"))
        mic.turn()  # barge in while the origin is still speaking
        await log.wait_for(kind("response.done", status="cancelled"))
        await log.wait_for(kind("response.done", status="completed"))

    summary, _ = asyncio.run(converse(server.ws_url, tmp_path, script, tools=WEATHER, tool_executor=gate))
    assert gate.cancelled == ["Paris"] and gate.finished == []
    assert sent(summary, "conversation.item.create") == [] and summary.followups == []


def test_a_result_ready_while_the_user_speaks_waits_and_their_answer_suppresses_the_follow_up(
    make_server: ServerFactory, tmp_path: Path
) -> None:
    # A slow transcript keeps the user's turn open on the server for a while after its commit.
    server = make_server(scripted_replies=["Let me check. " + calls("Paris"), "It is sunny, and noted."],
                         scripted_stt_delay_ms=300)
    gate = Gate()

    async def script(mic: ScriptedMic, log: EventLog) -> None:
        mic.turn()
        await log.wait_for(kind("response.done", status="completed"))  # the origin completed, tool still running
        mic.say(0.6)  # the user talks again; no silence yet, so their turn stays open
        await log.wait_for(kind("input_audio_buffer.speech_started"), count=2)
        gate.open("Paris")
        await log.wait_for(lambda e: e["type"] == "conversation.item.created"
                           and e["item"]["type"] == "function_call_output")
        assert not [e for e in log.events if e["type"] == "response.created"][1:]  # no follow-up yet
        mic.pause()
        await log.wait_for(kind("response.done", status="completed"), count=2)

    summary, log = asyncio.run(converse(server.ws_url, tmp_path, script, tools=WEATHER, tool_executor=gate))
    call_id = summary.responses[0]["output"][-1]["call_id"]
    # The follow-up went out once the user's item was committed; by then the turn's automatic
    # response (opened with the commit, as on OpenAI's server) was already active.
    first_attempt = sent(summary, "response.create")[0]["event_id"]
    refusal = next(i for i, e in enumerate(log.events) if e["type"] == "error")
    assert (log.events[refusal]["error"]["event_id"], log.events[refusal]["error"]["code"]) == (
        first_attempt, "conversation_already_has_active_response")
    # Sent only after the commit: a create sent while the user spoke would be refused before it.
    second_commit = [i for i, e in enumerate(log.events) if e["type"] == "input_audio_buffer.committed"][1]
    assert refusal > second_commit
    # The user's turn was then answered with the result in its model input: no second answer about it.
    assert len(summary.responses) == 2
    # (response.done's metadata also carries its playback figures: not what this test is about.)
    metadata = [{k: v for k, v in (r["metadata"] or {}).items() if k != "playback"} for r in summary.responses]
    assert metadata[1] == {"s2s_tool_input_call_ids": json.dumps([call_id])}
    assert not gate.cancelled and not metadata[0]


def test_tool_errors_go_back_as_outputs_and_ask_for_a_recovery_response(make_server: ServerFactory,
                                                                          tmp_path: Path) -> None:
    server = make_server(scripted_replies=['<tool_call>no_such_tool {}</tool_call>', "Sorry, that did not work."])

    async def quiet(name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult("done", create_response=False)

    async def script(mic: ScriptedMic, log: EventLog) -> None:
        mic.turn()
        await log.wait_for(kind("response.done", status="completed"), count=2)

    summary, _ = asyncio.run(converse(server.ws_url, tmp_path, script, tools=WEATHER, tool_executor=quiet,
                                      tool_response_create=False))
    (output,) = sent(summary, "conversation.item.create")
    assert json.loads(output["item"]["output"]) == {"error": "Unknown tool: no_such_tool"}
    assert summary.followups == [[output["item"]["call_id"]]]
    assert summary.responses[1]["output"][0]["content"][0]["transcript"] == "Sorry, that did not work."


def test_a_fire_and_forget_result_gets_no_follow_up(make_server: ServerFactory, tmp_path: Path) -> None:
    server = make_server(scripted_replies=["Dancing now. " + calls("Paris")])

    async def quiet(name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult({"ok": True}, create_response=False)

    async def script(mic: ScriptedMic, log: EventLog) -> None:
        mic.turn()
        await log.wait_for(lambda e: e["type"] == "conversation.item.created"
                           and e["item"]["type"] == "function_call_output")

    summary, _ = asyncio.run(converse(server.ws_url, tmp_path, script, tools=WEATHER, tool_executor=quiet))
    assert len(sent(summary, "conversation.item.create")) == 1
    assert summary.followups == [] and len(summary.responses) == 1


def test_hanging_up_cancels_running_tools(make_server: ServerFactory, tmp_path: Path) -> None:
    server = make_server(scripted_replies=[calls("Paris")])
    gate = Gate()

    async def script(mic: ScriptedMic, log: EventLog) -> None:
        mic.turn()
        await log.wait_for(kind("response.function_call_arguments.done"))
        while not gate.started:  # running, not just scheduled
            await asyncio.sleep(0.01)

    summary, _ = asyncio.run(converse(server.ws_url, tmp_path, script, tools=WEATHER, tool_executor=gate))
    assert gate.cancelled == ["Paris"] and sent(summary, "conversation.item.create") == []
