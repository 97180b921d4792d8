"""Remote LLM providers over the wire: a scripted OpenAI-compatible server drives the real server."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.fake_provider import FakeProvider, Scenario
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import free_port, serving

from .conftest import ServerFactory

BACKENDS = ["chat-completions", "responses-api"]
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture
def provider() -> Iterator[tuple[FakeProvider, str]]:
    fake = FakeProvider()
    port = free_port()
    with serving(fake.app(), port):
        yield fake, f"http://127.0.0.1:{port}/v1"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def start(make_server: ServerFactory, backend: str, url: str, **settings: Any) -> Any:
    return make_server(llm=backend, llm_base_url=url, llm_model="fake-model", **settings)


async def ask(client: RealtimeTestClient, text: str, **response: Any) -> list[dict[str, Any]]:
    await client.send("conversation.item.create",
                      item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    await client.send("response.create", response=response)
    return await client.collect_until("response.done")


def sent_efforts(fake: FakeProvider) -> list[Any]:
    return [r.get("reasoning_effort") if r["path"] == "chat.completions" else (r.get("reasoning") or {}).get("effort")
            for r in fake.requests]


async def test_a_streamed_answer_with_usage(make_server: ServerFactory, provider: Any, backend: str) -> None:
    fake, url = provider
    fake.scenarios = [Scenario("Paris is the capital of France.", usage=(21, 8))]
    async with RealtimeTestClient.connect(start(make_server, backend, url).ws_url) as client:
        await client.wait_for("session.created")
        events = await ask(client, "Capital of France?")
    done = events[-1]["response"]
    assert done["status"] == "completed"
    assert (done["usage"]["input_tokens"], done["usage"]["output_tokens"]) == (21, 8)
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert deltas == "Paris is the capital of France."
    assert fake.requests[0]["model"] == "fake-model" and fake.requests[0]["stream"] is True


async def test_tool_calls_come_out_as_function_call_items(make_server: ServerFactory, provider: Any,
                                                          backend: str) -> None:
    fake, url = provider
    fake.scenarios = [Scenario("Let me check.", tool_calls=(("get_weather", '{"city": "Paris"}'),)),
                      Scenario("It is sunny in Paris.")]
    async with RealtimeTestClient.connect(start(make_server, backend, url).ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"tools": [WEATHER], "tool_choice": "auto"})
        events = await ask(client, "Weather in Paris?", tool_choice="required")
        (call,) = [e for e in events if e["type"] == "response.function_call_arguments.done"]
        added = next(e for e in events if e["type"] == "response.output_item.added"
                     and e["item"]["type"] == "function_call")
        assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Paris"})
        assert added["output_index"] == call["output_index"] == 1  # after the spoken lead-in
        # The result goes back without a reply of its own; the follow-up is asked for.
        await client.send("conversation.item.create", item={"type": "function_call_output",
                                                            "call_id": call["call_id"], "output": '{"sky": "clear"}'})
        await client.wait_for("conversation.item.created")
        await client.send("response.create")
        follow_up = await client.collect_until("response.done")
    assert follow_up[-1]["response"]["status"] == "completed"
    first, second = fake.requests
    # Tools went natively, with the per-response tool_choice, in each API's own shape.
    if backend == "chat-completions":
        assert first["tools"][0]["function"]["name"] == "get_weather" and first["tool_choice"] == "required"
        assert second["messages"][-1] == {"role": "tool", "tool_call_id": call["call_id"],
                                          "content": '{"sky": "clear"}'}
    else:
        assert first["tools"][0]["name"] == "get_weather" and first["tool_choice"] == "required"
        assert second["input"][-1] == {"type": "function_call_output", "call_id": call["call_id"],
                                       "output": '{"sky": "clear"}'}


@pytest.mark.parametrize(("ending", "reason"), [("length", "max_output_tokens"),
                                                ("content_filter", "content_filter")])
async def test_token_limit_and_content_filter_end_incomplete_and_roll_back(
    make_server: ServerFactory, provider: Any, backend: str, ending: str, reason: str
) -> None:
    fake, url = provider
    fake.scenarios = [Scenario("This answer was cut", ending=ending), Scenario("Fine.")]  # type: ignore[arg-type]
    async with RealtimeTestClient.connect(start(make_server, backend, url).ws_url) as client:
        await client.wait_for("session.created")
        events = await ask(client, "Say something long.")
        await ask(client, "And now?")
    done = events[-1]["response"]
    assert done["status"] == "incomplete"
    assert done["status_details"] == {"type": "incomplete", "reason": reason}
    # The partial answer reached the client but left the model's history.
    assert "This answer was cut" in json.dumps(events)
    assert "This answer was cut" not in json.dumps(fake.requests[1])


@pytest.mark.parametrize("ending", ["failed", "http_error", "garbage"])
async def test_provider_failures_end_failed_with_an_error_event(
    make_server: ServerFactory, provider: Any, backend: str, ending: str
) -> None:
    fake, url = provider
    # The client retries a 500 once (a broken stream is not retried), so a 500 is scripted twice.
    attempts = 2 if ending == "http_error" else 1
    fake.scenarios = [Scenario("Half an ans", ending=ending)] * attempts + [Scenario("Recovered.")]  # type: ignore[arg-type]
    async with RealtimeTestClient.connect(start(make_server, backend, url).ws_url) as client:
        await client.wait_for("session.created")
        events = await ask(client, "Hello?")
        after = await ask(client, "Still there?")
    kinds = types(events)
    done = events[-1]["response"]
    assert done["status"] == "failed"
    assert done["status_details"]["type"] == "failed" and done["status_details"]["error"]["message"]
    error = events[kinds.index("error")]
    assert error["error"]["type"] == "server_error" and kinds.index("error") < kinds.index("response.done")
    # The session keeps working, and the failed answer is not in the next request's history.
    assert after[-1]["response"]["status"] == "completed"
    assert "Half an ans" not in json.dumps(fake.requests[-1])


async def test_a_stream_without_a_terminal_completes_with_a_warning(
    make_server: ServerFactory, provider: Any, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = provider
    fake.scenarios = [Scenario("No end in sight.", ending="no_terminal")]
    with caplog.at_level(logging.WARNING, logger="speech_to_speech"):
        async with RealtimeTestClient.connect(start(make_server, backend, url).ws_url) as client:
            await client.wait_for("session.created")
            events = await ask(client, "Hi")
    assert events[-1]["response"]["status"] == "completed"
    assert any("without" in record.getMessage() for record in caplog.records)


async def test_reasoning_effort_is_forwarded_as_each_api_spells_it(
    make_server: ServerFactory, provider: Any, backend: str
) -> None:
    fake, url = provider
    fake.scenarios = [Scenario("Ok.")]
    server = start(make_server, backend, url, responses_api_reasoning_effort="low")
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await ask(client, "1")  # the startup setting
        await client.update_session({"reasoning": {"effort": "high"}})
        await ask(client, "2")  # the session's choice
        await ask(client, "3", reasoning={"effort": "minimal"})  # this response only
        await client.update_session({"reasoning": {}})
        await ask(client, "4")  # {} keeps the session's choice
        await client.update_session({"reasoning": None})
        await ask(client, "5")  # null restores the startup setting
    assert sent_efforts(fake) == ["low", "high", "minimal", "high", "low"]


async def test_disable_thinking_is_replaced_by_a_client_effort(make_server: ServerFactory, provider: Any) -> None:
    fake, url = provider
    fake.scenarios = [Scenario("Ok.")]
    server = start(make_server, "chat-completions", url, responses_api_disable_thinking=True)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await ask(client, "1")
        await ask(client, "2", reasoning={"effort": "none"})
    assert fake.requests[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert "chat_template_kwargs" not in fake.requests[1] and fake.requests[1]["reasoning_effort"] == "none"


async def test_sampling_settings_reach_the_provider_only_when_set(make_server: ServerFactory, provider: Any,
                                                                  backend: str) -> None:
    fake, url = provider
    fake.scenarios = [Scenario("Ok.")]
    tuned = start(make_server, backend, url, temperature=0.6, top_p=0.9, repetition_penalty=1.1,
                  responses_api_disable_thinking=True)
    async with RealtimeTestClient.connect(tuned.ws_url) as client:
        await client.wait_for("session.created")
        await ask(client, "1")
    sent = fake.requests[-1]
    assert (sent["temperature"], sent["top_p"], sent["repetition_penalty"]) == (0.6, 0.9, 1.1)
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}  # both extra_body parts arrive
    async with RealtimeTestClient.connect(start(make_server, backend, url).ws_url) as client:
        await client.wait_for("session.created")
        await ask(client, "2")
    assert not {"temperature", "top_p", "repetition_penalty"} & fake.requests[-1].keys()  # provider defaults
