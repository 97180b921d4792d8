"""Conversation items in wire shape, and the chat history the LLM sees.

Items are kept as the dicts clients were sent (``conversation.item.retrieve``
returns them as delivered). Items of a response that ended ``incomplete`` or
``failed`` stay retrievable but leave the model's history (rolled back). An
assistant answer may enter the history only as far as it was heard (the
``said`` text :meth:`Conversation.history` is given: the playback ledger's,
for ``ack_only`` sessions).
An item the server withdrew (a reply taken back, conversation/take_back.py) is deleted,
and its id remembered for a while: a client's truncate or ack of it that
crossed the deletion is not the client's mistake.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech.pipeline.messages.generation import ChatMessage

# Ids of withdrawn items kept, for the client events about them still on their way.
WITHDRAWN_REMEMBERED = 16
# (item id, item) -> the text the item has in the model's history, when not its own (None: its own).
SaidText = Callable[[str, dict[str, Any]], str | None]


@dataclass(frozen=True)
class ConversationState:
    """A conversation as a session store keeps it, to be set up again on another replica with the same ids.

    ``said``: the text an item has in the model's history where it is not its own (an
    answer heard only in part, see ``SaidText``); ``excluded``: items out of that history.
    """

    items: tuple[dict[str, Any], ...]  # in order, as clients were sent them
    excluded: tuple[str, ...] = ()
    said: Mapping[str, str] = field(default_factory=dict)
    withdrawn: tuple[str, ...] = ()


class Conversation:
    """A session's items; past ``max_items`` the oldest leave it (a bound on a session's memory)."""

    def __init__(self, max_items: int | None = None) -> None:
        self._items: dict[str, dict[str, Any]] = {}
        self._excluded: set[str] = set()  # rolled back: not part of the model's history
        self.max_items = max_items
        self._withdrawn: deque[str] = deque(maxlen=WITHDRAWN_REMEMBERED)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def __len__(self) -> int:
        return len(self._items)

    @property
    def last_id(self) -> str | None:
        return next(reversed(self._items), None)

    def add(self, item: dict[str, Any], previous_item_id: str | None = None) -> str | None:
        """Insert ``item`` (after ``previous_item_id`` when given); returns the id before it."""
        item_id = item["id"]
        if previous_item_id is None or previous_item_id == self.last_id:
            before = self.last_id
            self._items[item_id] = item
        else:
            ordered = list(self._items.items())
            index = [key for key, _ in ordered].index(previous_item_id) + 1
            ordered.insert(index, (item_id, item))
            self._items = dict(ordered)
            before = previous_item_id
        while self.max_items is not None and len(self._items) > self.max_items:
            self.delete(next(iter(self._items)))
        return before

    def get(self, item_id: str) -> dict[str, Any] | None:
        return self._items.get(item_id)

    def transcribed(self, item_id: str, transcript: str) -> dict[str, Any] | None:
        """The user turn ``item_id`` has its ``transcript``: the item, or None if it was deleted meanwhile."""
        item = self._items.get(item_id)
        if item is not None:
            item["content"][0]["transcript"] = transcript
        return item

    def cut_transcript(self, item_id: str, transcript: str) -> None:
        """The assistant's ``item_id`` was heard only as far as ``transcript`` (playback truth): its transcript
        ends there, which is what the LLM's history holds."""
        item = self._items.get(item_id)
        if item is not None:
            (item.get("content") or [{}])[0]["transcript"] = transcript

    def replace(self, item: dict[str, Any]) -> None:
        """A newer version of an item (its id) takes its place, if it is still here (an MCP server's listing
        with its tools)."""
        if item["id"] in self._items:
            self._items[item["id"]] = item

    def snapshot(self, item_id: str) -> dict[str, Any]:
        return copy.deepcopy(self._items[item_id])

    def delete(self, item_id: str) -> None:
        self._items.pop(item_id, None)
        self._excluded.discard(item_id)

    def withdraw(self, item_id: str) -> bool:
        """Delete an item the server takes back; False if it is not here."""
        if item_id not in self._items:
            return False
        self.delete(item_id)
        self._withdrawn.append(item_id)
        return True

    def withdrawn(self, item_id: object) -> bool:
        return item_id in self._withdrawn

    def exclude(self, item_ids: list[str]) -> None:
        self._excluded.update(item_ids)

    def clear(self) -> None:
        self._items.clear()
        self._excluded.clear()

    def export(self, said: SaidText | None = None) -> ConversationState:
        """What a store keeps of the conversation. It holds the live item dicts: serialise it at once."""
        texts = {}
        for item_id, item in self._items.items():
            text = said(item_id, item) if said is not None else None
            if text is not None:
                texts[item_id] = text
        return ConversationState(tuple(self._items.values()), tuple(i for i in self._items if i in self._excluded),
                                 texts, tuple(self._withdrawn))

    def load(self, state: ConversationState) -> None:
        """Become the conversation ``state`` holds (a session taken over from another replica)."""
        self.clear()
        for item in state.items:
            self.add(copy.deepcopy(item))
        self.exclude([item_id for item_id in state.excluded if item_id in self._items])
        self._withdrawn.extend(state.withdrawn)

    def lost(self, item_ids: tuple[str, ...] | list[str]) -> None:
        """The items of a response whose server was lost: out of the history, and the open ones ended
        ``incomplete``, as a failed response leaves them."""
        lost = [item_id for item_id in item_ids if item_id in self._items]
        for item_id in lost:
            item = self._items[item_id]
            if item.get("status") == "in_progress":
                item["status"] = "incomplete"
        self.exclude(lost)

    def input_call_ids(self, history: tuple[ChatMessage, ...]) -> tuple[str, ...]:
        return tuple(m.tool_call_id for m in history if m.role == "tool" and m.tool_call_id)

    def history(self, heard: tuple[str | None, str] | None = None,
                said: SaidText | None = None) -> tuple[ChatMessage, ...]:
        """The model's view: the whole conversation (the LLM stage fits it to its context:
        llm/context_window.py).

        ``said`` gives the text an item has in that view when not its own (what
        the user heard of an answer: playback truth; None from it: its own).

        ``heard`` is (item id, words) of a user turn whose transcript is not in
        yet: it takes that item's place, or comes last if the item is not
        committed yet (a speculative request asks what the final one will).
        """
        items = self._items
        if heard is not None:
            item_id, words = heard
            pending = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": words}]}
            items = {**items, item_id or "": pending}
        messages: list[ChatMessage] = []
        declined = {item.get("approval_request_id"): item.get("reason") for item in items.values()
                    if item.get("type") == "mcp_approval_response" and not item.get("approve")}
        for item_id, item in items.items():
            if item_id in self._excluded:
                continue
            if item.get("type") in ("mcp_call", "mcp_approval_request"):
                for part in mcp_messages(item, declined):
                    _append(messages, part)
                continue
            message = to_chat_message(item)
            text = said(item_id, item) if said is not None and message is not None else None
            if text is not None:  # an unheard answer leaves no empty turn behind: nothing was said
                message = ChatMessage("assistant", text) if text else None
            if message is None:
                continue
            _append(messages, message)
        return tuple(messages)


def _append(messages: list[ChatMessage], message: ChatMessage) -> None:
    # An assistant turn's text and its tool calls become one message, as providers expect.
    if message.tool_calls and messages and messages[-1].role == "assistant":
        last = messages.pop()
        message = ChatMessage("assistant", last.content, last.tool_calls + message.tool_calls)
    messages.append(message)


def item_text(item: dict[str, Any]) -> str:
    """The text of a message item: typed text, or the transcript of audio."""
    parts = []
    for content in item.get("content") or []:
        text = content.get("text")
        if text is None:
            text = content.get("transcript")
        if text:
            parts.append(text)
    return "".join(parts)


def mcp_messages(item: dict[str, Any], declined: dict[Any, Any]) -> list[ChatMessage]:
    """An MCP call the server ran (or the user declined) as the model sees it: its call, then its result.

    A call still running, or an approval not answered yet, is not shown: the model
    is asked again once it has an outcome.
    """
    call = {"call_id": str(item["id"]), "name": str(item.get("name", "")), "arguments": str(item.get("arguments", ""))}
    if item["type"] == "mcp_approval_request":
        if item["id"] not in declined:
            return []
        reason = declined[item["id"]]
        result = "The user declined this call" + (f": {reason}" if reason else ".")
    elif item.get("error"):
        result = f"The call failed: {item['error'].get('message', 'unknown error')}"
    elif item.get("output") is not None:
        result = str(item["output"])
    else:
        return []
    return [ChatMessage("assistant", "", (call,)), ChatMessage("tool", result, tool_call_id=call["call_id"])]


def to_chat_message(item: dict[str, Any]) -> ChatMessage | None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        text = item_text(item)
        if role in ("user", "assistant", "system") and (text or role == "assistant"):
            return ChatMessage(role, text) if text else None
        return None
    if kind == "function_call":
        call = {key: str(item.get(key, "")) for key in ("call_id", "name", "arguments")}
        return ChatMessage("assistant", "", (call,))
    if kind == "function_call_output":
        return ChatMessage("tool", str(item.get("output", "")), tool_call_id=item.get("call_id"))
    return None
