"""Which of a server's tools a session may use, and which calls wait for the user's approval (pure rules)."""

from __future__ import annotations

from typing import Any

from speech_to_speech.realtime.tools.mcp_connection import ListedTool
from speech_to_speech.realtime.wire.mcp_tools import McpServerSpec


def allowed(spec: McpServerSpec, tool: ListedTool) -> bool:
    """``allowed_tools``: a list of names, or a filter by names and the read-only hint (both must hold)."""
    if spec.allowed is not None and tool.name not in spec.allowed:
        return False
    return spec.allowed_read_only is None or tool.read_only is spec.allowed_read_only


def _matches(rule: Any, tool: ListedTool) -> bool:
    if not isinstance(rule, dict):
        return False
    names, read_only = rule.get("tool_names"), rule.get("read_only")
    if names is None and read_only is None:
        return False
    return (names is None or tool.name in names) and (read_only is None or tool.read_only is read_only)


def needs_approval(spec: McpServerSpec, tool: ListedTool) -> bool:
    """``require_approval``: ``always``, ``never``, or filters; a tool no ``never`` filter names needs approval."""
    rule = spec.approval
    if rule == "never":
        return False
    if not isinstance(rule, dict):
        return True
    return not _matches(rule.get("never"), tool)


def as_function_tool(spec: McpServerSpec, tool: ListedTool) -> dict[str, Any]:
    """A listed MCP tool as the LLM is given function tools (the server's description says whose it is)."""
    description = tool.description.strip()
    if spec.description:
        description = f"{description} (from {spec.label}: {spec.description.strip()})".strip()
    return {"type": "function", "name": tool.name, "description": description,
            "parameters": tool.input_schema or {"type": "object", "properties": {}}}
