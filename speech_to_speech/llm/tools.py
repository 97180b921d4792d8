"""Tools for local models: JSON Schema -> Python signature -> prompt, and call parsing.

Local models whose chat template knows tools (Qwen2.5's, for one) get them
in that template's own format and answer with its calls,
``<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>``.
Other models get the tools as Python ``def`` stubs in the system prompt
(rendered by a Jinja2 template) and answer with calls such as
``<tool_call>get_weather(city='Paris')</tool_call>``. Calls are parsed as JSON
or with ``ast`` (never evaluated), checked against the registered tools, and
given fresh call ids. ``ToolCallSplitter`` separates them from the spoken text
while tokens stream, so call syntax never reaches the TTS.
"""

from __future__ import annotations

import ast
import inspect
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import jinja2

from speech_to_speech import ids
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, GenerateResponseRequest

log = logging.getLogger(__name__)

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"

_JSON_TO_PY = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "list",
               "object": "dict", "null": "None"}


def _annotation(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "Literal[" + ", ".join(repr(v) for v in schema["enum"]) + "]"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_JSON_TO_PY.get(k, "Any") for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"list[{_annotation(schema['items'])}]"
    return _JSON_TO_PY.get(kind, "Any") if isinstance(kind, str) else "Any"


def signature_from_schema(parameters: dict[str, Any] | None) -> inspect.Signature:
    """A keyword-only signature whose parameters mirror a JSON Schema object."""
    properties = (parameters or {}).get("properties") or {}
    required = set((parameters or {}).get("required") or [])
    params = []
    for name, schema in properties.items():
        default = inspect.Parameter.empty if name in required else schema.get("default")
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=_annotation(schema if isinstance(schema, dict) else {})))
    # Required parameters first, as Python demands of defaults (keyword-only allows any order, but reads better).
    params.sort(key=lambda p: p.default is not inspect.Parameter.empty)
    return inspect.Signature(params)


@dataclass(frozen=True)
class FunctionTool:
    name: str
    description: str
    parameters: dict[str, Any]

    @classmethod
    def from_session(cls, tool: dict[str, Any]) -> FunctionTool:
        return cls(tool["name"], tool.get("description") or "", tool.get("parameters") or {})

    @property
    def signature(self) -> inspect.Signature:
        return signature_from_schema(self.parameters)

    def to_code_prompt(self) -> str:
        params = []
        for param in self.signature.parameters.values():
            text = f"{param.name}: {param.annotation}"
            if param.default is not inspect.Parameter.empty:
                text += f" = {param.default!r}"
            params.append(text)
        doc_lines = [self.description.strip()] if self.description.strip() else []
        for name, schema in (self.parameters.get("properties") or {}).items():
            if isinstance(schema, dict) and schema.get("description"):
                doc_lines.append(f"{name}: {schema['description']}")
        doc = "\n    ".join(doc_lines) or "No description."
        return f'def {self.name}({", ".join(params)}):\n    """{doc}"""'


_TEMPLATE = jinja2.Environment(autoescape=False, keep_trailing_newline=True).from_string(
    """{{ instructions }}

You can call these Python functions:

{% for tool in tools %}{{ tool.to_code_prompt() }}

{% endfor %}To call one, write the call on its own between {{ open }} and {{ close }}, for example:
{{ open }}{{ example }}{{ close }}
Use keyword arguments with Python literals. {{ choice_rule }}Say a short sentence to the user before a call.
Never invent a function that is not listed. After a call, stop and wait for its result."""
)


def render_tool_prompt(instructions: str, tools: list[FunctionTool], tool_choice: str | dict[str, Any]) -> str:
    """The system prompt for a local model: instructions plus the tool stubs, or just instructions."""
    if tool_choice == "none" or not tools:
        return instructions
    if isinstance(tool_choice, dict):
        wanted = tool_choice.get("name")
        tools = [t for t in tools if t.name == wanted] or tools
        choice_rule = f"You must call {wanted} in this answer. "
    elif tool_choice == "required":
        choice_rule = "You must call one of the functions in this answer. "
    else:
        choice_rule = "Only call a function when it helps answer the user. "
    first = tools[0]
    example_args = ", ".join(f"{p}=..." for p in list(first.signature.parameters)[:2])
    return _TEMPLATE.render(instructions=instructions, tools=tools, open=CALL_OPEN, close=CALL_CLOSE,
                            example=f"{first.name}({example_args})", choice_rule=choice_rule).strip()


class ToolCallError(ValueError):
    pass


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        if isinstance(node, ast.Name) and node.id in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[node.id]
        raise


def _parse_json_call(source: str, tools: dict[str, FunctionTool]) -> tuple[str, dict[str, Any]]:
    """``{"name": …, "arguments": {…}}``: the call format of chat templates with native tools (Qwen, Hermes)."""
    try:
        data = json.loads(source)
    except json.JSONDecodeError as error:
        raise ToolCallError(f"not a JSON call: {source!r}") from error
    name, arguments = data.get("name") if isinstance(data, dict) else None, None
    if isinstance(data, dict):
        arguments = data.get("arguments", data.get("parameters", {}))
        if isinstance(arguments, str):  # some models encode the arguments twice
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError as error:
                raise ToolCallError(f"arguments of {name} are not JSON") from error
    if not isinstance(name, str) or not isinstance(arguments, dict):
        raise ToolCallError(f"not a call with a name and arguments: {source!r}")
    tool = tools.get(name)
    if tool is None:
        raise ToolCallError(f"unknown function {name!r}")
    if not tool.signature.parameters:
        return name, {}  # a tool without parameters: whatever the model put there (often its schema) is moot
    try:
        bound = tool.signature.bind(**arguments)
    except TypeError as error:
        raise ToolCallError(f"{name}: {error}") from error
    return name, dict(bound.arguments)


def parse_call(text: str, tools: dict[str, FunctionTool]) -> tuple[str, dict[str, Any]]:
    """Parse ``name(key=value, …)`` or a JSON call, and check it against the registered tools."""
    source = text.strip().strip("`").strip()
    if source.startswith("{"):
        return _parse_json_call(source, tools)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as error:
        raise ToolCallError(f"not a function call: {source!r}") from error
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ToolCallError(f"not a function call: {source!r}")
    name = call.func.id
    tool = tools.get(name)
    if tool is None:
        raise ToolCallError(f"unknown function {name!r}")
    try:
        arguments = {kw.arg: _literal(kw.value) for kw in call.keywords if kw.arg is not None}
        positional = [_literal(arg) for arg in call.args]
    except (ValueError, SyntaxError) as error:
        raise ToolCallError(f"arguments of {name} must be literals") from error
    try:
        bound = tool.signature.bind(**arguments)
    except TypeError as error:
        if positional:
            names = list(tool.signature.parameters)
            arguments = {**dict(zip(names, positional, strict=False)), **arguments}
            try:
                bound = tool.signature.bind(**arguments)
            except TypeError as inner:
                raise ToolCallError(f"{name}: {inner}") from inner
        else:
            raise ToolCallError(f"{name}: {error}") from error
    return name, dict(bound.arguments)


@dataclass(frozen=True)
class ParsedCall:
    call_id: str
    name: str
    arguments: str  # JSON


class ToolCallSplitter:
    """Splits streamed model text into speech and tool calls.

    Text that might be the start of ``<tool_call>`` is held back until it is
    clearly not; a complete call is parsed, and an invalid one is dropped
    with a log line (a spoken recovery is better than reading code aloud).
    """

    def __init__(self, tools: list[FunctionTool]) -> None:
        self.tools = {t.name: t for t in tools}
        self._buffer = ""
        # Small models often answer a call with the bare JSON object, without the tags: a reply
        # that opens with "{" is held until it is a whole JSON value, then tried as a call.
        self._at_start = True

    def feed(self, text: str) -> Iterator[str | ParsedCall]:
        self._buffer += text
        if self._at_start:
            head = self._buffer.lstrip()
            if not head:
                return
            if head.startswith("{"):
                end = _json_end(head)
                if end is None:
                    return
                self._buffer = head[end:]
                yield from self._bare_call(head[:end])
            self._at_start = False
        while True:
            start = self._buffer.find(CALL_OPEN)
            if start < 0:
                keep = _partial_suffix(self._buffer, CALL_OPEN)
                ready, self._buffer = self._buffer[: len(self._buffer) - keep], self._buffer[len(self._buffer) - keep:]
                if ready:
                    yield ready
                return
            if start:
                yield self._buffer[:start]
            end = self._buffer.find(CALL_CLOSE, start)
            if end < 0:
                self._buffer = self._buffer[start:]
                return
            body = self._buffer[start + len(CALL_OPEN) : end]
            self._buffer = self._buffer[end + len(CALL_CLOSE) :]
            yield from self._parse(body)

    def _bare_call(self, source: str) -> Iterator[str | ParsedCall]:
        try:
            name, arguments = parse_call(source, self.tools)
        except ToolCallError as error:
            log.info("a reply that opens with JSON is not a call (%s); it is text", error)
            yield source
            return
        yield ParsedCall(ids.call_id(), name, json.dumps(arguments))

    def finish(self) -> Iterator[str | ParsedCall]:
        """End of stream: an unterminated call is still tried; other held text is released."""
        rest, self._buffer = self._buffer, ""
        if self._at_start and rest.lstrip().startswith("{"):
            yield from self._bare_call(rest.strip())
            return
        if rest.startswith(CALL_OPEN):
            yield from self._parse(rest[len(CALL_OPEN) :])
        elif rest:
            yield rest

    def _parse(self, body: str) -> Iterator[ParsedCall]:
        for line in _call_lines(body):
            try:
                name, arguments = parse_call(line, self.tools)
            except ToolCallError as error:
                log.info("dropped an invalid tool call: %s", error)
                continue
            yield ParsedCall(ids.call_id(), name, json.dumps(arguments))


def _call_lines(body: str) -> list[str]:
    body = body.strip()
    if not body:
        return []
    if body.startswith("{"):
        return [body]  # one JSON call, which may span lines
    # Several calls may share one block, one per line.
    lines = [line for line in body.splitlines() if line.strip()]
    return lines if all(re.match(r"\s*[A-Za-z_][\w.]*\s*\(", line) for line in lines) else [body]


def _json_end(text: str) -> int | None:
    """The end of the JSON value at the start of ``text``; None while it is incomplete (or not JSON)."""
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return None
    return end


def _partial_suffix(text: str, marker: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``marker``."""
    for size in range(min(len(text), len(marker) - 1), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0


def tools_of(request: GenerateResponseRequest) -> list[FunctionTool]:
    if request.tool_choice == "none":
        return []
    return [FunctionTool.from_session(t) for t in request.tools if t.get("type", "function") == "function"]


def local_system_prompt(request: GenerateResponseRequest, default_instructions: str, native: bool = False) -> str:
    """The system prompt of a local model for this request: tools included, unless its template shows them."""
    instructions = request.instructions or default_instructions
    if native:
        return instructions + _native_choice_rule(request)
    return render_tool_prompt(instructions, tools_of(request), request.tool_choice)


def _native_choice_rule(request: GenerateResponseRequest) -> str:
    if not tools_of(request):
        return ""
    choice = request.tool_choice
    if isinstance(choice, dict):
        return f" You must call the function {choice.get('name')} in this answer."
    if choice == "required":
        return " You must call one of the functions in this answer."
    # Shown tools as a block of docs, the 1.5B told the user how to call them instead of calling them, and the
    # 0.5B filled optional arguments with names nobody said (bench tools, tune requests).
    return (" Call a function only when the request needs it; otherwise answer directly. You call the functions "
            "yourself and the user never sees them: to call one, reply with the call alone, and its result comes "
            "back to you. Never tell the user how to call a function. Put in a call only what the user said.")


def offered_tools(request: GenerateResponseRequest) -> list[FunctionTool]:
    """The tools the model may call in this reply: the one ``tool_choice`` names, else all of them."""
    tools = tools_of(request)
    if isinstance(request.tool_choice, dict):
        tools = [t for t in tools if t.name == request.tool_choice.get("name")] or tools
    return tools


def native_tools(request: GenerateResponseRequest) -> list[dict[str, Any]]:
    """The request's tools as chat templates take them (``{"type": "function", "function": {…}}``)."""
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": untitled(t.parameters or {"type": "object",
                                                                                      "properties": {}})}}
            for t in offered_tools(request)]


def untitled(schema: Any) -> Any:
    """A JSON Schema without its ``title`` keywords (pydantic's, as MCP servers list them: "Timezone" beside
    "timezone"): words the model reads on every prompt that say nothing the names do not."""
    if isinstance(schema, list):
        return [untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: ({name: untitled(sub) for name, sub in value.items()} if key == "properties" and
                  isinstance(value, dict) else untitled(value))
            for key, value in schema.items() if key != "title"}


def split_tool_calls(request: GenerateResponseRequest, chunks: Iterable[str]) -> Iterator[str | AssistantToolCallPart]:
    """Streamed local-model text -> spoken text and validated tool calls, in order."""
    tools = tools_of(request)
    if not tools:
        yield from chunks
        return
    splitter = ToolCallSplitter(tools)

    def convert(parts: Iterable[str | ParsedCall]) -> Iterator[str | AssistantToolCallPart]:
        for part in parts:
            if isinstance(part, ParsedCall):
                yield AssistantToolCallPart(request.response_id, request.generation, part.call_id, part.name,
                                            part.arguments)
            else:
                yield part

    for chunk in chunks:
        yield from convert(splitter.feed(chunk))
    yield from convert(splitter.finish())
