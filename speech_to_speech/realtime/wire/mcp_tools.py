"""The ``mcp`` tool of the GA session and of ``response.create``: its wire shape, checked, and its secrets kept apart.

A client names a remote MCP server (``server_label``, ``server_url``, the
``allowed_tools`` it may use, which calls need the user's ``require_approval``,
``headers`` and ``authorization`` to reach it). The secrets never go back out:
what ``session.updated`` echoes, what the replay journal and the session store
keep, carry ``headers`` with their values replaced (:func:`masked`), and the
real values live only in the :class:`McpServerSpec` the server connects with.
A tool with no ``server_url`` names a server this process was started with
(``--mcp_server NAME=COMMAND``).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# What an echoed header value reads as: the name is kept (a client can see what it sent), never the value.
MASK = "[redacted]"
LABEL_PATTERN = r"^[A-Za-z0-9_-]+$"


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ToolFilter(_Open):
    """A filter over a server's tools: by name, and/or by the server's read-only hint."""

    tool_names: list[str] | None = None
    read_only: bool | None = None


class ApprovalFilter(_Open):
    always: ToolFilter | None = None
    never: ToolFilter | None = None


class McpTool(_Open):
    type: Literal["mcp"]
    server_label: str = Field(min_length=1, max_length=64, pattern=LABEL_PATTERN)
    server_url: str | None = Field(default=None, max_length=2048)
    server_description: str | None = Field(default=None, max_length=2000)
    allowed_tools: list[str] | ToolFilter | None = None
    require_approval: Literal["always", "never"] | ApprovalFilter | None = None
    headers: dict[str, str] | None = None
    authorization: str | None = None
    connector_id: str | None = None
    tunnel_id: str | None = None

    @field_validator("server_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("server_url must be an http:// or https:// URL")
        return value

    @field_validator("connector_id", "tunnel_id")
    @classmethod
    def _not_served(cls, value: str | None) -> str | None:
        if value is not None:
            raise ValueError("this server reaches MCP servers by server_url only (no connectors or tunnels)")
        return value


@dataclass(frozen=True)
class McpServerSpec:
    """One MCP server as a session or response uses it: where it is, what of it may run, and how to reach it.

    ``command``: the argv of a local stdio server (``--mcp_server``), else None and ``url`` is set.
    ``transport``: ``sse`` when the URL is an SSE endpoint (its path ends in ``/sse``), else streamable HTTP.
    """

    label: str
    url: str | None = None
    command: tuple[str, ...] | None = None
    description: str | None = None
    allowed: tuple[str, ...] | None = None
    allowed_read_only: bool | None = None
    approval: str | dict[str, Any] = "never"
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def transport(self) -> str:
        if self.command is not None:
            return "stdio"
        return "sse" if (self.url or "").rstrip("/").endswith("/sse") else "streamable_http"

    @property
    def key(self) -> str:
        """What makes two specs the same connection (the header values count, hashed: never kept in clear)."""
        secret = hashlib.sha256(repr(self.headers).encode()).hexdigest()[:16]
        return f"{self.label}|{self.url}|{self.command}|{secret}"


def spec_of(tool: McpTool, local: dict[str, McpServerSpec]) -> McpServerSpec | None:
    """The server a session's ``mcp`` tool names (None: a label without a URL that no flag defines)."""
    headers = dict(tool.headers or {})
    if tool.authorization:
        headers.setdefault("Authorization", f"Bearer {tool.authorization}")
    allowed, read_only = None, None
    if isinstance(tool.allowed_tools, list):
        allowed = tuple(tool.allowed_tools)
    elif isinstance(tool.allowed_tools, ToolFilter):
        allowed = tuple(tool.allowed_tools.tool_names) if tool.allowed_tools.tool_names is not None else None
        read_only = tool.allowed_tools.read_only
    if tool.server_url is None:
        base = local.get(tool.server_label)
        if base is None:
            return None
        # The operator's server: the session may narrow what runs and ask for approvals, not move it.
        approval = _approval(tool.require_approval, default=base.approval)
        return McpServerSpec(base.label, None, base.command, tool.server_description or base.description,
                             allowed, read_only, approval, base.headers)
    # OpenAI's default for a client's remote server: every call needs the user's approval.
    approval = _approval(tool.require_approval, default="always")
    return McpServerSpec(tool.server_label, tool.server_url, None, tool.server_description, allowed, read_only,
                         approval, tuple(sorted(headers.items())))


def _approval(value: str | ApprovalFilter | None, default: str | dict[str, Any]) -> str | dict[str, Any]:
    if value is None:
        return default
    if isinstance(value, ApprovalFilter):
        return value.model_dump(exclude_none=True)
    return value


def masked(tool: dict[str, Any]) -> dict[str, Any]:
    """``tool`` as it may be echoed and stored: header values and the token replaced by :data:`MASK`."""
    if tool.get("type") != "mcp":
        return tool
    out = dict(tool)
    if isinstance(out.get("headers"), dict):
        out["headers"] = {name: MASK for name in out["headers"]}
    if out.get("authorization") is not None:
        out["authorization"] = MASK
    return out


def is_masked(tool: dict[str, Any]) -> bool:
    headers = tool.get("headers")
    return tool.get("authorization") == MASK or (isinstance(headers, dict) and MASK in headers.values())


def local_servers(entries: list[str] | None) -> dict[str, McpServerSpec]:
    """The ``--mcp_server NAME=COMMAND`` entries as specs: trusted by whoever started the server, so their
    calls need no approval unless a session asks for one."""
    servers: dict[str, McpServerSpec] = {}
    for entry in entries or []:
        name, command = parse_local_server(entry)
        servers[name] = McpServerSpec(name, command=command, approval="never")
    return servers


def parse_local_server(entry: str) -> tuple[str, tuple[str, ...]]:
    """``NAME=COMMAND`` -> (name, argv); raises ValueError naming what is wrong."""
    name, sep, command = entry.partition("=")
    name = name.strip()
    if not sep or not re.fullmatch(LABEL_PATTERN, name):
        raise ValueError(f"--mcp_server takes NAME=COMMAND with a NAME of letters, digits, _ or -: {entry!r}")
    argv = tuple(shlex.split(command))
    if not argv:
        raise ValueError(f"--mcp_server {name}= has no command")
    return name, argv
