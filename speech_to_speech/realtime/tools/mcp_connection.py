"""One connection to one MCP server (streamable HTTP, SSE or a local stdio process), with the ``mcp`` SDK.

The SDK's client is an anyio context that must be entered and left by the
same task, so a connection is held by a task of its own (:meth:`McpConnection._hold`)
for the session's life; calls are made from other tasks, each under its own
timeout. Every failure becomes an :class:`McpFailure` in the GA ``mcp_call``
error shape; none of them carries the headers (they are never logged).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from speech_to_speech.realtime.wire.mcp_tools import McpServerSpec

log = logging.getLogger(__name__)

MAX_LIST_PAGES = 10  # a server that pages forever cannot hold a session's listing


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool | None = None

    def wire(self) -> dict[str, Any]:
        """As the ``mcp_list_tools`` item lists it."""
        annotations = {"readOnlyHint": self.read_only} if self.read_only is not None else None
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema,
                "annotations": annotations}


class McpFailure(Exception):
    """A call or a listing that failed; ``error`` is the GA item's error object."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.error = error


class McpTimeout(McpFailure):
    """The tool did not answer in time (the call is abandoned)."""


def failure(kind: str, message: str, code: int | None = None) -> McpFailure:
    error: dict[str, Any] = {"type": kind, "message": message}
    if kind != "tool_execution_error":
        error["code"] = code if code is not None else 0
    return McpFailure(error)


def _describe(error: BaseException) -> McpFailure:
    """A failure of the SDK or the transport, said plainly (an exception group is read to its first leaf)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, McpFailure):
        return error
    if isinstance(error, ImportError):
        return failure("protocol_error", "MCP support is not installed here (pip install 'speech-to-speech[mcp]')")
    status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(status, int):
        return failure("http_error", f"the MCP server answered HTTP {status}", status)
    code = getattr(getattr(error, "error", None), "code", None)
    if isinstance(code, int):
        return failure("protocol_error", str(error) or type(error).__name__, code)
    if isinstance(error, ConnectionError | OSError):
        return failure("http_error", f"cannot reach the MCP server: {type(error).__name__}")
    return failure("protocol_error", f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)


class McpConnection:
    """A session's connection to one server: opened once (:meth:`open` lists its tools), used by many calls."""

    def __init__(self, spec: McpServerSpec) -> None:
        self.spec = spec
        self._client: Any = None
        self._holder: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._lost: McpFailure | None = None
        # The SDK reports a refused HTTP request as a bare internal error: the status is kept here to say it.
        self._refused: int | None = None

    async def open(self, timeout: float) -> list[ListedTool]:
        """Connect and list the server's tools; raises McpFailure (and leaves nothing running)."""
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._holder = asyncio.create_task(self._hold(ready), name=f"mcp-{self.spec.label}")
        try:
            self._client = await asyncio.wait_for(asyncio.shield(ready), timeout)
            return await asyncio.wait_for(self._list(), timeout)
        except TimeoutError:
            await self.close()
            raise failure("http_error", f"the MCP server did not answer within {timeout:g} s", 504) from None
        except McpFailure as error:
            await self.close()
            raise self._http_failure() or error from None
        except Exception as error:  # noqa: BLE001 - whatever the SDK or transport raised, said as a failure
            await self.close()
            raise self._http_failure() or _describe(error) from None

    async def _hold(self, ready: asyncio.Future[Any]) -> None:
        try:
            async with self._connected() as client:
                if not ready.done():
                    ready.set_result(client)
                await self._closing.wait()
        except BaseException as error:  # the holder ends any way it must; what went wrong is kept
            described = _describe(error)
            if not ready.done():
                ready.set_exception(described)
            elif not self._closing.is_set():
                self._lost = described
                log.info("MCP server %r: connection lost (%s)", self.spec.label, described)
            if isinstance(error, asyncio.CancelledError):
                raise

    @contextlib.asynccontextmanager
    async def _connected(self) -> AsyncIterator[Any]:
        from mcp import Client  # the SDK is an extra (pip install 'speech-to-speech[mcp]')

        spec = self.spec
        if spec.command is not None:
            from mcp.client.stdio import StdioServerParameters

            params = StdioServerParameters(command=spec.command[0], args=list(spec.command[1:]))
            async with Client(params) as client:
                yield client
            return
        assert spec.url is not None
        headers = dict(spec.headers)
        if spec.transport == "sse":
            from mcp.client.sse import sse_client

            async with Client(sse_client(spec.url, headers=headers)) as client:  # it raises on a refusal
                yield client
            return
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0),
                                      event_hooks={"response": [self._note_status]}) as http, \
                Client(streamable_http_client(spec.url, http_client=http)) as client:
            yield client

    async def _list(self) -> list[ListedTool]:
        tools: list[ListedTool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await self._client.list_tools(cursor=cursor)
            for tool in page.tools:
                annotations = getattr(tool, "annotations", None)
                read_only = getattr(annotations, "read_only_hint", None) if annotations is not None else None
                schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None) or {}
                tools.append(ListedTool(tool.name, tool.description or "", dict(schema), read_only))
            cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
            if not cursor:
                break
        return tools

    async def call(self, name: str, arguments: dict[str, Any], timeout: float) -> str:
        """The tool's output as text; raises McpFailure (the tool's own error, the server's, a timeout)."""
        if self._lost is not None or self._client is None:
            raise self._lost or failure("protocol_error", "the MCP server is not connected", -32000)
        try:
            result = await asyncio.wait_for(self._client.call_tool(name, arguments), timeout)
        except TimeoutError:
            raise McpTimeout({"type": "tool_execution_error",
                              "message": f"the tool did not answer within {timeout:g} s"}) from None
        except Exception as error:  # noqa: BLE001 - whatever the SDK or transport raised, said as a failure
            raise self._http_failure() or _describe(error) from None
        text = "\n".join(part.text for part in result.content or [] if getattr(part, "type", None) == "text")
        if not text and getattr(result, "structured_content", None) is not None:
            text = json.dumps(result.structured_content)
        if getattr(result, "is_error", False):
            raise failure("tool_execution_error", text or "the tool failed")
        return text

    def _http_failure(self) -> McpFailure | None:
        status, self._refused = self._refused, None
        return failure("http_error", f"the MCP server answered HTTP {status}", status) if status else None

    async def _note_status(self, response: Any) -> None:
        if response.status_code >= 400:
            self._refused = response.status_code

    async def close(self) -> None:
        self._closing.set()
        holder, self._holder = self._holder, None
        if holder is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(holder), 2.0)
        except (TimeoutError, Exception):  # noqa: BLE001 - a holder that will not end in time is cancelled
            holder.cancel()
            with contextlib.suppress(BaseException):
                await holder
