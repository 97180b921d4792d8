"""A session's MCP servers: connected and listed once each (cached), with the GA listing events.

A server is listed when a session (or a response) first names it: an
``mcp_list_tools`` item joins the conversation, ``mcp_list_tools.in_progress``
follows, then ``mcp_list_tools.completed`` with the tools on the item
(``conversation.item.done``) or ``mcp_list_tools.failed`` and an ``error``.
The same server named again (same label, URL and headers) is not listed
again. A response waits for the listing of its servers
(:meth:`McpServers.ready`); a failed one leaves it without those tools,
never stuck.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech import ids
from speech_to_speech.protocol import error_codes, error_types
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.conversation import conversation_item_added, conversation_item_done
from speech_to_speech.protocol.server_events.mcp import (
    mcp_list_tools_completed,
    mcp_list_tools_failed,
    mcp_list_tools_in_progress,
)
from speech_to_speech.protocol.server_events.session import error_event
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.tools.mcp_connection import ListedTool, McpConnection, McpFailure
from speech_to_speech.realtime.tools.mcp_policy import allowed, as_function_tool
from speech_to_speech.realtime.wire.mcp_tools import McpServerSpec

log = logging.getLogger(__name__)


@dataclass
class ListedServer:
    spec: McpServerSpec
    connection: McpConnection
    item: dict[str, Any]
    status: str = "listing"  # listing, listed, failed
    tools: list[ListedTool] = field(default_factory=list)


class McpServers:
    """The MCP servers one session has named, each connected and listed once (runs on the event loop)."""

    def __init__(self, conversation: Conversation, emit: Callable[[ServerEvent], None], *, list_timeout_s: float,
                 on_listed: Callable[[], None]) -> None:
        self._conversation = conversation
        self._emit = emit
        self._timeout = list_timeout_s
        self._on_listed = on_listed  # a response waiting for its tools may go on
        self._servers: dict[str, ListedServer] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def use(self, specs: Iterable[McpServerSpec]) -> None:
        """Start listing each server of ``specs`` not listed yet."""
        for spec in specs:
            if spec.key not in self._servers:
                self._start(spec)

    def _start(self, spec: McpServerSpec) -> None:
        item: dict[str, Any] = {"id": ids.item_id(), "type": "mcp_list_tools", "server_label": spec.label, "tools": []}
        server = self._servers[spec.key] = ListedServer(spec, McpConnection(spec), item)
        previous = self._conversation.add(item)
        self._emit(conversation_item_added(item, previous))
        self._emit(mcp_list_tools_in_progress(item["id"]))
        task = asyncio.get_running_loop().create_task(self._list(server), name=f"mcp-list-{spec.label}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _list(self, server: ListedServer) -> None:
        try:
            server.tools = await server.connection.open(self._timeout)
        except McpFailure as error:
            server.status = "failed"
            log.info("MCP server %r: listing failed: %s", server.spec.label, error)
            self._emit(mcp_list_tools_failed(server.item["id"]))
            self._emit(error_event(
                error_codes.MCP_LIST_TOOLS_FAILED,
                f"Listing the tools of MCP server {server.spec.label!r} failed: {error}; it is left out",
                type=error_types.SERVER_ERROR))
        else:
            server.status = "listed"
            server.item = {**server.item, "tools": [tool.wire() for tool in server.tools]}
            self._conversation.replace(server.item)  # the listing, with its tools
            self._emit(mcp_list_tools_completed(server.item["id"]))
        self._emit(conversation_item_done(server.item))
        self._on_listed()

    def ready(self, specs: Iterable[McpServerSpec]) -> bool:
        """Every server of ``specs`` is listed, or failed to be (None of them still listing)."""
        return all(self._servers[s.key].status != "listing" for s in specs if s.key in self._servers)

    def tools(self, specs: Iterable[McpServerSpec]) -> list[tuple[McpServerSpec, ListedTool]]:
        """The tools ``specs`` allow of their listed servers; a name two servers share is the first one's."""
        found: dict[str, tuple[McpServerSpec, ListedTool]] = {}
        for spec in specs:
            server = self._servers.get(spec.key)
            if server is None or server.status != "listed":
                continue
            for tool in server.tools:
                if allowed(spec, tool) and tool.name not in found:
                    found[tool.name] = (spec, tool)
        return list(found.values())

    def function_tools(self, specs: Iterable[McpServerSpec], taken: set[str]) -> list[dict[str, Any]]:
        """Those tools as the LLM is given function tools (names of the client's own tools win)."""
        return [as_function_tool(spec, tool) for spec, tool in self.tools(specs) if tool.name not in taken]

    def find(self, specs: Iterable[McpServerSpec], name: str) -> tuple[McpServerSpec, ListedTool] | None:
        return next(((spec, tool) for spec, tool in self.tools(specs) if tool.name == name), None)

    def connection(self, spec: McpServerSpec) -> McpConnection | None:
        server = self._servers.get(spec.key)
        return server.connection if server is not None and server.status == "listed" else None

    async def aclose(self) -> None:
        """End the session's listings and connections (a stdio server's process exits with it)."""
        for task in list(self._tasks):
            task.cancel()
        for server in self._servers.values():
            await server.connection.close()
        self._servers.clear()
