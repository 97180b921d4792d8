"""``tools``: the MCP servers this process offers every session, and how long a tool may take."""

from __future__ import annotations

import re
import shlex

from pydantic import BaseModel, Field, field_validator

from speech_to_speech.settings.server import SECTION_CONFIG

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


class ToolSettings(BaseModel):
    """``tools``: local MCP servers (stdio) and the time limits of listing and calling any MCP server."""

    model_config = SECTION_CONFIG

    mcp_server: list[str] | None = Field(
        None, description="A local MCP server every session may use, as NAME=COMMAND (started over stdio for "
        "each session that uses it, e.g. time='python -m mcp_server_time'); repeatable.",
    )
    mcp_list_timeout_s: float = Field(
        15.0, gt=0.0, le=300.0, description="How long connecting to an MCP server and listing its tools may take "
        "before the listing fails (the response goes on without them).",
    )
    mcp_call_timeout_s: float = Field(
        20.0, gt=0.0, le=300.0, description="How long an MCP tool call may run before it fails as timed out "
        "(the model is told, and says so).",
    )

    @field_validator("mcp_server")
    @classmethod
    def _name_equals_command(cls, entries: list[str] | None) -> list[str] | None:
        for entry in entries or []:
            name, sep, command = entry.partition("=")
            if not sep or not _NAME.match(name.strip()) or not shlex.split(command):
                raise ValueError(f"expected NAME=COMMAND (NAME: letters, digits, _ or -), got {entry!r}")
        return entries
