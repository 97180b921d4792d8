"""The tools ``bench tools`` offers the model, none of which it was trained on.

The ``mcp-server-time`` package's two tools and two of our MCP test server's
(``book_table``, ``schedule_meeting``: nested objects and lists), listed
through the real servers, and a ``fetch`` tool with the schema of the
``mcp-server-fetch`` package's (a URL, a length, a start and a raw switch),
declared here as a function tool: that server is not a dependency, and with
no network its pages could not be read anyway, so the client answers it.
"""

from __future__ import annotations

import sys
from typing import Any

from speech_to_speech.realtime.tools.mcp_connection import McpConnection
from speech_to_speech.realtime.tools.mcp_policy import as_function_tool
from speech_to_speech.realtime.wire.mcp_tools import McpServerSpec

FETCH_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "fetch",
    "description": "Fetches a URL from the internet and extracts its contents as markdown. With it you can "
                   "read up-to-date pages for the user.",
    "parameters": {
        "type": "object",
        "properties": {
            "url": {"type": "string", "format": "uri", "description": "URL to fetch"},
            "max_length": {"type": "integer", "default": 5000, "minimum": 1, "maximum": 999999,
                           "description": "Maximum number of characters to return."},
            "start_index": {"type": "integer", "default": 0, "minimum": 0,
                            "description": "Start the returned text at this character, to read on after a "
                                           "truncated fetch."},
            "raw": {"type": "boolean", "default": False,
                    "description": "Return the page's HTML as it is, not simplified."},
        },
        "required": ["url"],
    },
}
OUR_TOOLS = ("book_table", "schedule_meeting")  # of our test server's: the nested ones


def time_server_command(python: str = sys.executable) -> tuple[str, ...]:
    return (python, "-m", "mcp_server_time", "--local-timezone", "UTC")


def our_server_command(python: str = sys.executable, delay_s: float = 0.0) -> tuple[str, ...]:
    return (python, "-m", "speech_to_speech.testing.mcp_server", "--delay", str(delay_s))


def mcp_specs() -> tuple[McpServerSpec, ...]:
    return (McpServerSpec("time", command=time_server_command()),
            McpServerSpec("tools", command=our_server_command(), allowed=OUR_TOOLS))


async def listed_tools(timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """The MCP servers' tools as function tools (listed over stdio, as a session would), then ``fetch``."""
    tools: list[dict[str, Any]] = []
    for spec in mcp_specs():
        connection = McpConnection(spec)
        try:
            listed = await connection.open(timeout_s)
        finally:
            await connection.close()
        tools += [as_function_tool(spec, tool) for tool in listed if spec.allowed is None or tool.name in spec.allowed]
    return [*tools, FETCH_TOOL]
