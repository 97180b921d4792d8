"""A small MCP server of ours for tests and benches, served over stdio, streamable HTTP or SSE on loopback.

Its tools cover what a voice agent meets: a slow look-up (``look_up_order``,
``--delay`` seconds), nested arguments (``book_table``, ``schedule_meeting``), a tool that fails
(``broken_tool``) and one that never answers (``hang``). :func:`serving`
also serves any other MCP server object (the ``mcp-server-time`` package's,
say) over HTTP or SSE, optionally behind a required header, so a session's
``headers`` are checked for real.

    python -m speech_to_speech.testing.mcp_server [--delay 3]     # over stdio
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field


class Party(BaseModel):
    size: int = Field(description="How many people")
    names: list[str] = Field(default_factory=list, description="Names of the guests, if given")


class Slot(BaseModel):
    day: str = Field(description="The day, as the user said it (e.g. 'Monday', 'tomorrow')")
    start: str = Field(description="Start time, 24-hour HH:MM")
    end: str = Field(description="End time, 24-hour HH:MM")


def tools_server(delay_s: float = 0.0) -> MCPServer:
    """Our test server; ``delay_s``: how long ``look_up_order`` takes."""
    server = MCPServer("s2s-test-tools")

    @server.tool(description="Look up where a customer's order is and when it arrives.")
    async def look_up_order(order_number: str) -> str:
        await asyncio.sleep(delay_s)
        return f"Order {order_number} has shipped and arrives on Friday."

    @server.tool(description="Book a table at a restaurant for a party at a time (HH:MM).")
    def book_table(restaurant: str, party: Party, time: str) -> str:
        names = f" for {', '.join(party.names)}" if party.names else ""
        return f"Booked {restaurant} at {time} for {party.size}{names}."

    @server.tool(description="Put a meeting in the user's calendar.")
    def schedule_meeting(title: str, when: Slot, attendees: list[str]) -> str:
        return f"Scheduled {title!r} on {when.day} {when.start}-{when.end} with {', '.join(attendees) or 'nobody'}."

    @server.tool(description="A tool whose backend is down.")
    def broken_tool() -> str:
        raise ToolError("the backend database is unreachable")

    @server.tool(description="A tool that never answers.")
    async def hang() -> str:
        await asyncio.Event().wait()
        return "never"

    return server


def time_server(local_timezone: str = "UTC") -> MCPServer:
    """The ``mcp-server-time`` package's server (a dev dependency), with a fixed local time zone."""
    from mcp_server_time.server import create_server

    return create_server(local_timezone)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _require(app: Any, header: tuple[str, str]) -> Any:
    """``app`` answering 401 to any request without ``header`` (name, value)."""
    name, value = header[0].lower().encode(), header[1].encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope.get("headers") or []).get(name) != value:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return guarded


@contextmanager
def serving(server: MCPServer, transport: str = "streamable_http",
            require_header: tuple[str, str] | None = None) -> Iterator[str]:
    """Serve ``server`` on a free loopback port in a thread; yields its URL (``…/mcp`` or ``…/sse``)."""
    import uvicorn

    app = server.sse_app() if transport == "sse" else server.streamable_http_app()
    if require_header is not None:
        app = _require(app, require_header)
    port = free_port()
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=http.run, name="mcp-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not http.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test MCP server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    finally:
        http.should_exit = True
        thread.join(5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds look_up_order takes")
    args = parser.parse_args(argv)
    asyncio.run(tools_server(args.delay).run_stdio_async())


if __name__ == "__main__":
    main()
