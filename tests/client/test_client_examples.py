"""The example tool modules, their HTTP calls pointed at a local test server: results and every error path."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from speech_to_speech.client.tools import ToolCaller, load_tool_module
from speech_to_speech.testing.server import free_port, serving

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Provider:
    """A fake search provider: answers every request with the next queued reply, and keeps the requests."""

    url: str
    replies: list[Response] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def reply(self, body: Any = None, status: int = 200, text: str | None = None) -> None:
        self.replies.append(PlainTextResponse(text, status) if text is not None else JSONResponse(body, status))


@pytest.fixture
def provider() -> Iterator[Provider]:
    app = FastAPI()
    port = free_port()
    fake = Provider(f"http://127.0.0.1:{port}")

    @app.api_route("/{path:path}", methods=["GET", "POST"])
    async def anything(path: str, request: Request) -> Response:
        body = await request.body()
        fake.requests.append({"method": request.method, "path": "/" + path, "query": dict(request.query_params),
                              "headers": {k.lower(): v for k, v in request.headers.items()},
                              "json": json.loads(body) if body else None})
        return fake.replies.pop(0)

    with serving(app, port):
        yield fake


@pytest.fixture
def serper(provider: Provider, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("SERPER_SEARCH_URL", provider.url + "/search")
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    monkeypatch.syspath_prepend(str(REPO))
    return importlib.import_module("examples.realtime_web_search_tool")


@pytest.fixture
def youcom(provider: Provider, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("YDC_FREE_SEARCH_URL", provider.url + "/v1/agents/search")
    monkeypatch.setenv("YDC_SEARCH_URL", provider.url + "/v1/search")
    monkeypatch.delenv("YDC_API_KEY", raising=False)
    monkeypatch.syspath_prepend(str(REPO))
    return importlib.import_module("examples.realtime_youcom_search_tool")


def search(module: Any, **arguments: Any) -> dict[str, Any]:
    """One call through the client's own caller, as `--tool-module` runs it."""
    caller = ToolCaller(module.TOOLS, module.execute_tool, getattr(module, "CREATE_RESPONSE", True))
    outcome = asyncio.run(asyncio.wait_for(caller.call("c1", "web_search", json.dumps(arguments)), 30))
    assert outcome.create_response  # search results are always spoken about
    return dict(json.loads(outcome.output))


# ---------------------------------------------------------------- Serper


def test_serper_returns_the_answer_and_results(serper: Any, provider: Provider) -> None:
    provider.reply({"answerBox": {"answer": "Paris"},
                    "organic": [{"title": "Paris - Wikipedia", "link": "https://w/paris", "snippet": "Capital."},
                                {"title": "France", "link": "https://w/france", "snippet": "A country."}]})
    assert search(serper, query="capital of France", num_results=1) == {
        "query": "capital of France", "answer": "Paris",
        "results": [{"title": "Paris - Wikipedia", "url": "https://w/paris", "snippet": "Capital."}]}
    (request,) = provider.requests
    assert (request["method"], request["headers"]["x-api-key"], request["json"]) == (
        "POST", "test-key", {"q": "capital of France", "num": 1})


def test_serper_without_a_key_says_how_to_configure_it(serper: Any, provider: Provider,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SERPER_API_KEY")
    result = search(serper, query="news")
    assert "set SERPER_API_KEY" in result["error"] and result["results"] == []
    assert provider.requests == []


@pytest.mark.parametrize(("status", "body", "message"), [
    (401, {"message": "Unauthorized"}, "rejected the API key (HTTP 401)"),
    (429, {"message": "slow down"}, "rate limit or quota reached"),
    (500, {"message": "boom"}, "Serper returned HTTP 500"),
    (200, None, "not JSON"),
])
def test_serper_provider_errors_come_back_as_output(serper: Any, provider: Provider, status: int, body: Any,
                                                    message: str) -> None:
    if body is None:
        provider.reply(text="<html>oops</html>", status=status)
    else:
        provider.reply(body, status)
    assert message in search(serper, query="news")["error"]


def test_network_errors_come_back_as_output(serper: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPER_SEARCH_URL", f"http://127.0.0.1:{free_port()}/search")
    assert "could not reach Serper" in search(serper, query="news")["error"]


def test_bad_arguments_never_reach_the_provider(serper: Any, provider: Provider) -> None:
    caller = ToolCaller(serper.TOOLS, serper.execute_tool)
    outcome = asyncio.run(caller.call("c1", "web_search", json.dumps({"query": "x", "num_results": 50})))
    assert "Invalid arguments" in json.loads(outcome.output)["error"]
    assert provider.requests == []


# ---------------------------------------------------------------- You.com


YOUCOM_BODY = {"results": {
    "web": [{"title": "HF robotics", "url": "https://hf/robots", "description": "desc", "snippets": ["One.", "Two."]}],
    "news": [{"title": "News", "url": "https://n/1", "description": "Fresh."}],
}}


def test_youcom_works_without_a_key_and_never_claims_an_answer(youcom: Any, provider: Provider) -> None:
    provider.reply(YOUCOM_BODY)
    assert search(youcom, query="robotics news") == {"query": "robotics news", "answer": None, "results": [
        {"title": "HF robotics", "url": "https://hf/robots", "snippet": "One. Two."},
        {"title": "News", "url": "https://n/1", "snippet": "Fresh."},
    ]}
    (request,) = provider.requests
    assert (request["method"], request["path"], request["query"]) == (
        "GET", "/v1/agents/search", {"query": "robotics news", "count": "5"})
    assert "x-api-key" not in request["headers"]  # the free endpoint refuses keys


def test_youcom_with_a_key_uses_the_search_api(youcom: Any, provider: Provider,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YDC_API_KEY", "ydc-key")
    provider.reply(YOUCOM_BODY)
    assert search(youcom, query="robotics", num_results=1)["results"] == [
        {"title": "HF robotics", "url": "https://hf/robots", "snippet": "One. Two."}]
    (request,) = provider.requests
    assert (request["path"], request["headers"]["x-api-key"]) == ("/v1/search", "ydc-key")


@pytest.mark.parametrize(("status", "body", "message"), [
    (429, {"error": "daily limit"}, "rate limit or quota reached"),
    (403, {"error": "forbidden"}, "rejected the API key (HTTP 403)"),
    (502, {"error": "bad gateway"}, "You.com returned HTTP 502"),
    (200, {"results": ["not", "a", "mapping"]}, "unexpected JSON"),
])
def test_youcom_provider_errors_come_back_as_output(youcom: Any, provider: Provider, status: int, body: Any,
                                                    message: str) -> None:
    provider.reply(body, status)
    result = search(youcom, query="news")
    assert message in result["error"] and result["answer"] is None


def test_both_examples_load_as_tool_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # as `--tool-module examples.…` from the repository root
    for name in ("examples.realtime_web_search_tool", "examples.realtime_youcom_search_tool"):
        module = load_tool_module(name)
        assert [tool["name"] for tool in module.tools] == ["web_search"] and module.create_response
