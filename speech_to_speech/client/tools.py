"""Client-side tools: the module contract, argument validation and one call's execution.

A tool module provides ``TOOLS`` (flattened Realtime function definitions),
``execute_tool(name, arguments)`` returning an awaitable, and optionally
``CREATE_RESPONSE`` (default True): whether a plain return value asks for a
spoken follow-up. Every failure becomes an error *output*, so the model can
recover instead of the turn stalling.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema

log = logging.getLogger(__name__)

ToolExecutor = Callable[[str, dict[str, Any]], Any]


@dataclass(frozen=True)
class ToolResult:
    """A tool's output; ``create_response`` None falls back to the module's CREATE_RESPONSE."""

    output: Any
    create_response: bool | None = None


@dataclass(frozen=True)
class ToolOutcome:
    """What goes back on the wire for one call: the output text and whether to speak about it."""

    call_id: str
    output: str
    create_response: bool
    error: bool = False


@dataclass(frozen=True)
class ToolModule:
    tools: list[dict[str, Any]]
    execute_tool: ToolExecutor
    create_response: bool


def load_tool_module(name: str) -> ToolModule:
    """Import ``name`` and check it has the attributes of the contract."""
    # The console script does not put the working directory on sys.path; `python -m` does.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        raise ValueError(f"cannot import tool module {name!r}: {error}") from error
    tools = getattr(module, "TOOLS", None)
    execute = getattr(module, "execute_tool", None)
    if not isinstance(tools, list) or not all(isinstance(t, dict) and t.get("name") for t in tools):
        raise ValueError(f"{name}.TOOLS must be a list of function definitions with a name")
    if not callable(execute):
        raise ValueError(f"{name}.execute_tool must be callable")
    create = getattr(module, "CREATE_RESPONSE", True)
    return ToolModule([{"type": "function", **t} for t in tools], execute, bool(create))


def _error(call_id: str, message: str) -> ToolOutcome:
    # Errors always ask for a recovery response, whatever the module default.
    return ToolOutcome(call_id, json.dumps({"error": message}), create_response=True, error=True)


class ToolCaller:
    """Validates and runs calls against one set of declared tools."""

    def __init__(self, tools: list[dict[str, Any]], executor: ToolExecutor, default_create_response: bool = True):
        self.executor = executor
        self.default_create_response = default_create_response
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        for tool in tools:
            schema = tool.get("parameters") or {"type": "object"}
            validator_class = jsonschema.validators.validator_for(schema)
            validator_class.check_schema(schema)
            self._validators[str(tool["name"])] = validator_class(schema)

    async def call(self, call_id: str, name: str, raw_arguments: str) -> ToolOutcome:
        """Run one call; never raises except for cancellation."""
        validator = self._validators.get(name)
        if validator is None:
            return _error(call_id, f"Unknown tool: {name}")
        try:
            arguments = json.loads(raw_arguments or "{}")
        except ValueError as error:
            return _error(call_id, f"Invalid JSON arguments for {name}: {error}")
        problem = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path) or "arguments"
            return _error(call_id, f"Invalid arguments for {name} at {where}: {problem.message}")
        # A tool is user code: any failure it raises becomes an error output for the model.
        try:
            pending = self.executor(name, arguments)
        except Exception as error:  # noqa: BLE001
            log.warning("tool %s failed: %r", name, error)
            return _error(call_id, f"{name} failed: {type(error).__name__}: {error}")
        if not inspect.isawaitable(pending):
            return _error(call_id, f"execute_tool did not return an awaitable for {name}")
        try:
            value = await pending
        except Exception as error:  # noqa: BLE001
            log.warning("tool %s failed: %r", name, error)
            return _error(call_id, f"{name} failed: {type(error).__name__}: {error}")
        return self._outcome(call_id, name, value)

    def _outcome(self, call_id: str, name: str, value: Any) -> ToolOutcome:
        create = self.default_create_response
        if isinstance(value, ToolResult):
            if value.create_response is not None:
                create = value.create_response
            value = value.output
        if isinstance(value, str):
            return ToolOutcome(call_id, value, create)
        try:
            return ToolOutcome(call_id, json.dumps(value), create)
        except (TypeError, ValueError) as error:
            return _error(call_id, f"{name} returned a value that is not JSON-serializable: {error}")
