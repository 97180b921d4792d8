"""A `web_search` tool backed by You.com, for `--tool-module`; works without any key.

Without ``YDC_API_KEY`` it uses You.com's free search endpoint (about 100
searches a day, no account); with it, the You.com Search API. You.com gives no
direct answer, so ``answer`` is always null and the model answers from
``results``. ``YDC_FREE_SEARCH_URL`` / ``YDC_SEARCH_URL`` override the endpoints.
"""

from __future__ import annotations

import os
from typing import Any

from examples._web_search import WEB_SEARCH_TOOL, SearchError, error_result, hit, request_json, result

FREE_URL = "https://api.you.com/v1/agents/search"
KEYED_URL = "https://ydc-index.io/v1/search"

TOOLS = [WEB_SEARCH_TOOL]


async def execute_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    query = str(arguments.get("query", ""))
    if name != "web_search":
        return error_result(query, f"unknown tool {name!r}")
    count = int(arguments.get("num_results", 5))
    key = os.environ.get("YDC_API_KEY", "").strip()
    # The free endpoint refuses requests that carry a key, so the URL and the header go together.
    if key:
        url, headers = os.environ.get("YDC_SEARCH_URL", KEYED_URL), {"X-API-Key": key}
    else:
        url, headers = os.environ.get("YDC_FREE_SEARCH_URL", FREE_URL), {}
    try:
        body = await request_json("You.com", "GET", url, params={"query": query, "count": count}, headers=headers)
    except SearchError as error:
        return error_result(query, str(error))
    found = body.get("results") or {}
    if not isinstance(found, dict):
        return error_result(query, "You.com returned unexpected JSON")
    hits = [
        hit(r.get("title"), r.get("url"), " ".join(r.get("snippets") or []) or r.get("description"))
        for r in [*(found.get("web") or []), *(found.get("news") or [])]
    ]
    return result(query, None, hits[:count])
