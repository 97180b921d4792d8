"""A `web_search` tool backed by Serper (Google results), for `--tool-module`.

    export SERPER_API_KEY=...   # from https://serper.dev
    speech-to-speech local --tool-module examples.realtime_web_search_tool

``SERPER_SEARCH_URL`` overrides the endpoint (tests point it at a local server).
"""

from __future__ import annotations

import os
from typing import Any

from examples._web_search import WEB_SEARCH_TOOL, SearchError, error_result, hit, request_json, result

DEFAULT_URL = "https://google.serper.dev/search"

TOOLS = [WEB_SEARCH_TOOL]


async def execute_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    query = str(arguments.get("query", ""))
    if name != "web_search":
        return error_result(query, f"unknown tool {name!r}")
    key = os.environ.get("SERPER_API_KEY", "").strip()
    if not key:
        return error_result(query, "web search is not configured: set SERPER_API_KEY (https://serper.dev)")
    count = int(arguments.get("num_results", 5))
    try:
        body = await request_json("Serper", "POST", os.environ.get("SERPER_SEARCH_URL", DEFAULT_URL),
                                  json={"q": query, "num": count}, headers={"X-API-KEY": key})
    except SearchError as error:
        return error_result(query, str(error))
    box = body.get("answerBox") or {}
    graph = body.get("knowledgeGraph") or {}
    answer = box.get("answer") or box.get("snippet") or graph.get("description") or None
    hits = [hit(o.get("title"), o.get("link"), o.get("snippet")) for o in body.get("organic") or []]
    return result(query, answer, hits[:count])
