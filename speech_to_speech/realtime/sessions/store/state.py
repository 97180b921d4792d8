"""A session's state in the store as JSON: what is written of a snapshot, and what a replica reads back.

The state holds the session object and the conversation's items themselves
(their ids, which ones are out of the model's history, and the text an
answer heard only in part has in it), so the replica that resumes the
session has the same items and derives the same history from them. A state
written before the items were stored holds the history the LLM was given
instead: its items are made again from that history, with new ids (all that
form allows).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from speech_to_speech import ids
from speech_to_speech.pipeline.messages.generation import ChatMessage
from speech_to_speech.realtime.conversation.history import ConversationState
from speech_to_speech.realtime.sessions.store.base import Snapshot


@dataclass(frozen=True)
class StoredState:
    session: dict[str, Any]
    conversation: ConversationState
    last_client_event_id: str | None
    conversation_id: str | None
    response_items: tuple[str, ...]


def state_json(snapshot: Snapshot) -> str:
    conversation = snapshot.conversation
    return json.dumps({
        "session": snapshot.session,
        "conversation": {"items": list(conversation.items), "excluded": list(conversation.excluded),
                         "said": dict(conversation.said), "withdrawn": list(conversation.withdrawn)},
        "conversation_id": snapshot.conversation_id,
        "response_items": list(snapshot.response_items),
        "last_client_event_id": snapshot.last_client_event_id,
    })


def read_state(text: str, response: dict[str, Any] | None) -> StoredState:
    """The state ``text`` holds; ``response``: the response in the making when it was written, if any."""
    state = json.loads(text)
    stored = state.get("conversation")
    if stored is None:
        conversation, lost = _from_history(state.get("history") or [], in_the_making=response is not None)
        return StoredState(state["session"], conversation, state.get("last_client_event_id"), None, lost)
    conversation = ConversationState(tuple(stored.get("items") or ()), tuple(stored.get("excluded") or ()),
                                     dict(stored.get("said") or {}), tuple(stored.get("withdrawn") or ()))
    return StoredState(state["session"], conversation, state.get("last_client_event_id"),
                       state.get("conversation_id"), tuple(state.get("response_items") or ()))


def _from_history(history: list[dict[str, Any]], in_the_making: bool) -> tuple[ConversationState, tuple[str, ...]]:
    """The items of a history written in the older form, and those of the response in the making: what
    the history ended with that the assistant said (only there it can have been written)."""
    messages = [ChatMessage(m["role"], m["content"], tuple(m.get("tool_calls") or ()), m.get("tool_call_id"))
                for m in history]
    items = [item for message in messages for item in history_items(message)]
    lost: list[str] = []
    for item in reversed(items):
        if not in_the_making or item.get("role", "assistant") != "assistant" or item["type"] == "function_call_output":
            break
        lost.append(item["id"])
    return ConversationState(tuple(items)), tuple(reversed(lost))


def history_items(message: ChatMessage) -> list[dict[str, Any]]:
    """The conversation items one history message stands for, with new ids."""
    head: dict[str, Any] = {"object": "realtime.item", "status": "completed"}
    if message.role == "tool":
        return [{"id": ids.item_id(), **head, "type": "function_call_output", "call_id": message.tool_call_id or "",
                 "output": message.content}]
    items: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        kind = "output_text" if message.role == "assistant" else "input_text"
        items.append({"id": ids.item_id(), **head, "type": "message", "role": message.role,
                      "content": [{"type": kind, "text": message.content}]})
    for call in message.tool_calls:
        items.append({"id": ids.item_id(), **head, "type": "function_call", "call_id": call.get("call_id", ""),
                      "name": call.get("name", ""), "arguments": call.get("arguments", "")})
    return items
