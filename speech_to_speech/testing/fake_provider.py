"""A scripted OpenAI-compatible LLM provider on loopback, for tests and benchmarks.

It streams ``/v1/chat/completions`` and ``/v1/responses`` exactly as the
wire formats say (server-sent events), playing one ``Scenario`` per request:
text, tool calls, token usage, and how the stream ends (normal, token limit,
content filter, failure, or no terminal signal at all). Every request body
is recorded so tests can check what the server forwarded.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

Ending = Literal["stop", "length", "content_filter", "failed", "http_error", "no_terminal", "garbage"]
GARBAGE = "data: {this is not JSON\n\n"  # a provider that breaks mid-stream


@dataclass(frozen=True)
class Scenario:
    text: str = "Hello from the provider."
    tool_calls: tuple[tuple[str, str], ...] = ()  # (name, JSON arguments)
    ending: Ending = "stop"
    usage: tuple[int, int] = (11, 7)
    token_delay_s: float = 0.0


@dataclass
class FakeProvider:
    scenarios: list[Scenario] = field(default_factory=lambda: [Scenario()])
    requests: list[dict[str, Any]] = field(default_factory=list)

    def next_scenario(self) -> Scenario:
        return self.scenarios.pop(0) if len(self.scenarios) > 1 else self.scenarios[0]

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions", response_model=None)
        async def chat(request: Request) -> StreamingResponse | JSONResponse:
            body = await request.json()
            self.requests.append({"path": "chat.completions", **body})
            scenario = self.next_scenario()
            if scenario.ending == "http_error":
                return _http_error()
            return StreamingResponse(_chat_stream(scenario, body), media_type="text/event-stream")

        @app.post("/v1/responses", response_model=None)
        async def responses(request: Request) -> StreamingResponse | JSONResponse:
            body = await request.json()
            self.requests.append({"path": "responses", **body})
            scenario = self.next_scenario()
            if scenario.ending == "http_error":
                return _http_error()
            return StreamingResponse(_responses_stream(scenario, body), media_type="text/event-stream")

        return app


def _http_error() -> JSONResponse:
    return JSONResponse({"error": {"message": "the provider is down", "type": "server_error"}}, status_code=500)


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]] if text else []


async def _chat_stream(scenario: Scenario, body: dict[str, Any]) -> AsyncIterator[str]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "fake")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        payload = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(payload)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for word in _words(scenario.text):
        await asyncio.sleep(scenario.token_delay_s)
        yield chunk({"content": word})
    for index, (name, arguments) in enumerate(scenario.tool_calls):
        yield chunk({"tool_calls": [{"index": index, "id": f"call_fake{index}", "type": "function",
                                     "function": {"name": name, "arguments": ""}}]})
        half = len(arguments) // 2
        for piece in (arguments[:half], arguments[half:]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if scenario.ending == "failed":
        yield f"data: {json.dumps({'error': {'message': 'the model crashed', 'type': 'server_error'}})}\n\n"
        return
    if scenario.ending == "garbage":
        yield GARBAGE
        return
    if scenario.ending != "no_terminal":
        finish = scenario.ending if scenario.ending != "stop" else ("tool_calls" if scenario.tool_calls else "stop")
        yield chunk({}, finish)
    usage = {"prompt_tokens": scenario.usage[0], "completion_tokens": scenario.usage[1],
             "total_tokens": sum(scenario.usage)}
    yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


async def _responses_stream(scenario: Scenario, body: dict[str, Any]) -> AsyncIterator[str]:
    sequence = 0

    def event(payload: dict[str, Any]) -> str:
        nonlocal sequence
        sequence += 1
        return f"event: {payload['type']}\ndata: {json.dumps({**payload, 'sequence_number': sequence})}\n\n"

    response = {"id": "resp_fake", "object": "response", "created_at": int(time.time()), "model": body.get("model"),
                "status": "in_progress", "output": [], "tools": [], "parallel_tool_calls": True,
                "tool_choice": "auto"}
    yield event({"type": "response.created", "response": response})
    for word in _words(scenario.text):
        await asyncio.sleep(scenario.token_delay_s)
        yield event({"type": "response.output_text.delta", "item_id": "msg_fake", "output_index": 0,
                     "content_index": 0, "delta": word, "logprobs": []})
    for index, (name, arguments) in enumerate(scenario.tool_calls):
        item = {"type": "function_call", "id": f"fc_{index}", "call_id": f"call_fake{index}", "name": name,
                "arguments": arguments, "status": "completed"}
        yield event({"type": "response.output_item.done", "output_index": index + 1, "item": item})
    usage = {"input_tokens": scenario.usage[0], "output_tokens": scenario.usage[1],
             "total_tokens": sum(scenario.usage), "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 0}}
    if scenario.ending == "garbage":
        yield GARBAGE
    elif scenario.ending in ("stop",):
        yield event({"type": "response.completed", "response": {**response, "status": "completed", "usage": usage}})
    elif scenario.ending in ("length", "content_filter"):
        reason = "max_output_tokens" if scenario.ending == "length" else "content_filter"
        yield event({"type": "response.incomplete", "response": {
            **response, "status": "incomplete", "usage": usage, "incomplete_details": {"reason": reason}}})
    elif scenario.ending == "failed":
        yield event({"type": "response.failed", "response": {
            **response, "status": "failed", "error": {"code": "server_error", "message": "the model crashed"}}})
