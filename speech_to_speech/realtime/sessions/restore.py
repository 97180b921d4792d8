"""A session's service set back to what the store held: its session object and its history for the LLM.

The history comes back as the items the LLM would be given (answers cut
where playback truth cut them), with new item ids; items the old server
kept out of the history (rolled back) do not come back. A response the
old server was generating when it was lost cannot go on here: it ends as
``failed`` with ``server_lost``.
"""

from __future__ import annotations

import copy
from typing import Any

from speech_to_speech import ids
from speech_to_speech.pipeline.messages import ChatMessage
from speech_to_speech.protocol import error_codes, error_types
from speech_to_speech.realtime.service.realtime_service import RealtimeService
from speech_to_speech.realtime.sessions.store import StoredSession

SERVER_LOST_MESSAGE = "The server generating this response was lost; the session was resumed on another server"


def restore_service(service: RealtimeService, stored: StoredSession) -> None:
    service.state.session = copy.deepcopy(stored.session)
    service.last_client_event_id = stored.last_client_event_id
    service.unit.config.replace(service.state.runtime_config())
    history = list(stored.history)
    while stored.response is not None and history and history[-1].role == "assistant":
        history.pop()  # what the lost response had said so far leaves the history, as a failed one's does
    for message in history:
        for item in history_items(message):
            service.conversation.add(item)


def history_items(message: ChatMessage) -> list[dict[str, Any]]:
    """The conversation items one history message stands for."""
    head: dict[str, Any] = {"id": ids.item_id(), "object": "realtime.item", "status": "completed"}
    if message.role == "tool":
        return [{**head, "type": "function_call_output", "call_id": message.tool_call_id or "",
                 "output": message.content}]
    items: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        kind = "output_text" if message.role == "assistant" else "input_text"
        items.append({**head, "type": "message", "role": message.role,
                      "content": [{"type": kind, "text": message.content}]})
    for call in message.tool_calls:
        items.append({"id": ids.item_id(), "object": "realtime.item", "status": "completed",
                      "type": "function_call", "call_id": call.get("call_id", ""), "name": call.get("name", ""),
                      "arguments": call.get("arguments", "")})
    return items


def lost_response_done(stored: StoredSession, finished_id: str | None = None) -> dict[str, Any] | None:
    """The ``response.done`` of the response that was in the making when its server was lost, if one was
    and the client has not heard it end (``finished_id``: the last response it heard end)."""
    if stored.response is None or stored.response.get("id") == finished_id:
        return None
    error = {"type": error_types.SERVER_ERROR, "code": error_codes.SERVER_LOST, "message": SERVER_LOST_MESSAGE}
    body = {**stored.response, "status": "failed", "status_details": {"type": "failed", "error": error}}
    return {"type": "response.done", "response": body}
