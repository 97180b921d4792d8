"""What happens to the conversation's items: added, done, retrieved, deleted, truncated.

An item event carries a copy of the item as it is at that moment: the
conversation goes on changing the item itself (its transcript, its status).
"""

from typing import Literal, NotRequired, TypedDict

from speech_to_speech.protocol.server_events.shapes import OMITTED, Item, Omitted


class ConversationItemCreated(TypedDict):
    type: Literal["conversation.item.created"]
    previous_item_id: str | None
    item: Item


class ConversationItemAdded(TypedDict):
    type: Literal["conversation.item.added"]
    previous_item_id: str | None
    item: Item


class ConversationItemDone(TypedDict):
    type: Literal["conversation.item.done"]
    previous_item_id: NotRequired[str | None]  # where the client's conversation.item.create put it
    item: Item


class ConversationItemRetrieved(TypedDict):
    type: Literal["conversation.item.retrieved"]
    item: Item


class ConversationItemDeleted(TypedDict):
    type: Literal["conversation.item.deleted"]
    item_id: str


class ConversationItemTruncated(TypedDict):
    type: Literal["conversation.item.truncated"]
    item_id: str
    content_index: int
    audio_end_ms: int


def conversation_item_created(item: Item, previous_item_id: str | None) -> ConversationItemCreated:
    return {"type": "conversation.item.created", "previous_item_id": previous_item_id, "item": dict(item)}


def conversation_item_added(item: Item, previous_item_id: str | None) -> ConversationItemAdded:
    return {"type": "conversation.item.added", "previous_item_id": previous_item_id, "item": dict(item)}


def conversation_item_done(item: Item, previous_item_id: str | Omitted | None = OMITTED) -> ConversationItemDone:
    if previous_item_id is OMITTED:
        return {"type": "conversation.item.done", "item": dict(item)}
    return {"type": "conversation.item.done", "previous_item_id": previous_item_id, "item": dict(item)}


def conversation_item_retrieved(item: Item) -> ConversationItemRetrieved:
    return {"type": "conversation.item.retrieved", "item": dict(item)}


def conversation_item_deleted(item_id: str) -> ConversationItemDeleted:
    return {"type": "conversation.item.deleted", "item_id": item_id}


def conversation_item_truncated(item_id: str, audio_end_ms: int) -> ConversationItemTruncated:
    """An assistant item's audio (its only content part) cut at ``audio_end_ms``."""
    return {"type": "conversation.item.truncated", "item_id": item_id, "content_index": 0,
            "audio_end_ms": audio_end_ms}
