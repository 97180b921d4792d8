"""The events of MCP servers the server calls itself: listing a server's tools, and each call in a response."""

from typing import Literal, TypedDict


class McpListToolsInProgress(TypedDict):
    type: Literal["mcp_list_tools.in_progress"]
    item_id: str


class McpListToolsCompleted(TypedDict):
    type: Literal["mcp_list_tools.completed"]
    item_id: str


class McpListToolsFailed(TypedDict):
    type: Literal["mcp_list_tools.failed"]
    item_id: str


class ResponseMcpCallArgumentsDelta(TypedDict):
    type: Literal["response.mcp_call_arguments.delta"]
    response_id: str
    item_id: str
    output_index: int
    delta: str


class ResponseMcpCallArgumentsDone(TypedDict):
    type: Literal["response.mcp_call_arguments.done"]
    response_id: str
    item_id: str
    output_index: int
    arguments: str


class ResponseMcpCallInProgress(TypedDict):
    type: Literal["response.mcp_call.in_progress"]
    item_id: str
    output_index: int


class ResponseMcpCallCompleted(TypedDict):
    type: Literal["response.mcp_call.completed"]
    item_id: str
    output_index: int


class ResponseMcpCallFailed(TypedDict):
    type: Literal["response.mcp_call.failed"]
    item_id: str
    output_index: int


def mcp_list_tools_in_progress(item_id: str) -> McpListToolsInProgress:
    return {"type": "mcp_list_tools.in_progress", "item_id": item_id}


def mcp_list_tools_completed(item_id: str) -> McpListToolsCompleted:
    return {"type": "mcp_list_tools.completed", "item_id": item_id}


def mcp_list_tools_failed(item_id: str) -> McpListToolsFailed:
    return {"type": "mcp_list_tools.failed", "item_id": item_id}


def response_mcp_call_arguments_delta(response_id: str, item_id: str, output_index: int,
                                      delta: str) -> ResponseMcpCallArgumentsDelta:
    return {"type": "response.mcp_call_arguments.delta", "response_id": response_id, "item_id": item_id,
            "output_index": output_index, "delta": delta}


def response_mcp_call_arguments_done(response_id: str, item_id: str, output_index: int,
                                     arguments: str) -> ResponseMcpCallArgumentsDone:
    return {"type": "response.mcp_call_arguments.done", "response_id": response_id, "item_id": item_id,
            "output_index": output_index, "arguments": arguments}


def response_mcp_call_in_progress(item_id: str, output_index: int) -> ResponseMcpCallInProgress:
    return {"type": "response.mcp_call.in_progress", "item_id": item_id, "output_index": output_index}


def response_mcp_call_completed(item_id: str, output_index: int) -> ResponseMcpCallCompleted:
    return {"type": "response.mcp_call.completed", "item_id": item_id, "output_index": output_index}


def response_mcp_call_failed(item_id: str, output_index: int) -> ResponseMcpCallFailed:
    return {"type": "response.mcp_call.failed", "item_id": item_id, "output_index": output_index}
