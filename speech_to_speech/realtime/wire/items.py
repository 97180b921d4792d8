"""Validation of what clients put into the conversation and into response.create."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from speech_to_speech import ids
from speech_to_speech.protocol.error_codes import INVALID_REQUEST
from speech_to_speech.realtime.wire.content_limits import ContentLimits
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.mcp_tools import McpServerSpec, McpTool, spec_of
from speech_to_speech.realtime.wire.session import REASONING_EFFORTS
from speech_to_speech.realtime.wire.session_model import FunctionTool, SessionModel, Tool
from speech_to_speech.realtime.wire.voices import VoiceCatalog, requested_voice

_CONTENT_TYPES = {
    "user": {"input_text", "input_audio"},
    "system": {"input_text"},
    "assistant": {"output_text", "text", "output_audio", "audio"},
}


def _bad(message: str, param: str, event_id: str | None) -> RealtimeError:
    return RealtimeError(INVALID_REQUEST, message, param=param, event_id=event_id)


def client_item(item: Any, event_id: str | None) -> dict[str, Any]:
    """A conversation item from ``conversation.item.create``, normalised, or an error."""
    if not isinstance(item, dict):
        raise _bad("'item' must be an object", "item", event_id)
    kind = item.get("type")
    item_id = item.get("id") or ids.item_id()
    if not isinstance(item_id, str) or len(item_id) > 64:
        raise _bad("'item.id' must be a string of at most 64 characters", "item.id", event_id)
    base = {"id": item_id, "object": "realtime.item", "type": kind, "status": "completed"}
    if kind == "message":
        role = item.get("role")
        if role not in _CONTENT_TYPES:
            raise _bad("'item.role' must be user, assistant or system", "item.role", event_id)
        content = item.get("content")
        if not isinstance(content, list) or not content:
            raise _bad("'item.content' must be a non-empty list", "item.content", event_id)
        parts = []
        for index, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") not in _CONTENT_TYPES[role]:
                allowed = ", ".join(sorted(_CONTENT_TYPES[role]))
                raise _bad(f"content of a {role} message must be one of: {allowed}",
                           f"item.content[{index}].type", event_id)
            text = part.get("text", part.get("transcript"))
            if text is not None and not isinstance(text, str):
                raise _bad("content text must be a string", f"item.content[{index}]", event_id)
            parts.append({k: v for k, v in part.items() if k != "audio"})
        return {**base, "role": role, "content": parts}
    if kind == "function_call_output":
        call_id, output = item.get("call_id"), item.get("output")
        if not isinstance(call_id, str) or not call_id:
            raise _bad("'item.call_id' must be a non-empty string", "item.call_id", event_id)
        if not isinstance(output, str):
            raise _bad("'item.output' must be a string", "item.output", event_id)
        return {**base, "call_id": call_id, "output": output}
    if kind == "function_call":
        name, call_id, arguments = item.get("name"), item.get("call_id"), item.get("arguments", "")
        if not isinstance(name, str) or not isinstance(call_id, str) or not isinstance(arguments, str):
            raise _bad("a function_call item needs string name, call_id and arguments", "item", event_id)
        return {**base, "call_id": call_id, "name": name, "arguments": arguments}
    if kind == "mcp_approval_response":
        request_id, approve, reason = item.get("approval_request_id"), item.get("approve"), item.get("reason")
        if not isinstance(request_id, str) or not request_id:
            raise _bad("'item.approval_request_id' must be a non-empty string", "item.approval_request_id", event_id)
        if not isinstance(approve, bool):
            raise _bad("'item.approve' must be true or false", "item.approve", event_id)
        if reason is not None and not isinstance(reason, str):
            raise _bad("'item.reason' must be a string", "item.reason", event_id)
        return {"id": item_id, "type": kind, "approval_request_id": request_id, "approve": approve,
                "reason": reason}
    raise _bad("'item.type' must be message, function_call, function_call_output or mcp_approval_response",
               "item.type", event_id)


def _mcp_specs(tools: list[Tool], local: dict[str, McpServerSpec], event_id: str | None) -> tuple[McpServerSpec, ...]:
    specs = []
    for index, tool in enumerate(tools):
        if isinstance(tool, McpTool):
            spec = spec_of(tool, local)
            if spec is None:
                raise _bad(f"MCP tool {tool.server_label!r} has no server_url and no --mcp_server of that name",
                           f"response.tools[{index}].server_url", event_id)
            specs.append(spec)
    return tuple(specs)


def _metadata(value: Any, event_id: str | None) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) > 16:
        raise _bad("'response.metadata' must be an object of at most 16 keys", "response.metadata", event_id)
    for key, entry in value.items():
        if not isinstance(entry, str) or len(key) > 64 or len(entry) > 512:
            raise _bad("metadata values must be strings (keys ≤ 64, values ≤ 512 characters)",
                       f"response.metadata.{key}", event_id)
    return dict(value)


def response_options(response: Any, event_id: str | None, limits: ContentLimits | None = None,
                     voices: VoiceCatalog | None = None,
                     local_mcp: dict[str, McpServerSpec] | None = None) -> dict[str, Any]:
    """Per-response overrides of ``response.create``, validated; absent keys keep the session's."""
    if response is None:
        return {}
    if not isinstance(response, dict):
        raise _bad("'response' must be an object", "response", event_id)
    if not isinstance(response.get("tools") or [], list):
        raise _bad("'response.tools' must be an array", "response.tools", event_id)
    options: dict[str, Any] = {}
    checked = {key: response[key] for key in ("instructions", "tool_choice", "output_modalities",
                                               "max_output_tokens") if key in response}
    try:
        parsed = SessionModel.model_validate(checked)
        declared = SessionModel.model_validate({"tools": response.get("tools") or []}).tools or []
    except ValidationError as error:
        first = error.errors()[0]
        param = "response." + ".".join(str(p) for p in first["loc"])
        raise _bad(f"Invalid value for '{param}': {first['msg']}", param, event_id) from None
    if parsed.instructions is not None:
        options["instructions"] = parsed.instructions
    if parsed.tool_choice is not None:
        options["tool_choice"] = parsed.tool_choice
    if parsed.output_modalities:
        options["output_modalities"] = tuple(parsed.output_modalities)
    if "max_output_tokens" in response and response["max_output_tokens"] is not None:
        options["max_output_tokens"] = parsed.max_output_tokens
    tools = [t.model_dump(exclude_none=True) for t in declared if isinstance(t, FunctionTool)]
    (limits or ContentLimits()).check("response", parsed.instructions, tools, event_id)
    if "tools" in response:
        options["tools"] = tuple(tools)
        options["mcp"] = _mcp_specs(declared, local_mcp or {}, event_id)
    options["metadata"] = _metadata(response.get("metadata"), event_id)
    reasoning = response.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        effort = reasoning["effort"]
        if effort not in REASONING_EFFORTS:
            raise _bad(f"reasoning.effort must be one of {', '.join(REASONING_EFFORTS)}",
                       "response.reasoning.effort", event_id)
        options["reasoning_effort"] = effort
    elif reasoning is not None and not isinstance(reasoning, dict):
        raise _bad("'response.reasoning' must be an object", "response.reasoning", event_id)
    conversation = response.get("conversation", "auto")
    if conversation not in ("auto", "none"):
        raise _bad("'response.conversation' must be 'auto' or 'none'", "response.conversation", event_id)
    options["conversation"] = conversation
    voice = requested_voice(response, "response")
    if voice is not None and voice.value is not None:
        (voices or VoiceCatalog()).check(voice, event_id)
        options["voice"] = voice.value
    return options
