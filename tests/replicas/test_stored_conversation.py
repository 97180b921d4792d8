"""A conversation written to the store and read back on another replica is the same conversation.

Any sequence of what a session does to its items (added, rolled back,
withdrawn, deleted, an answer heard in part) survives the store's JSON:
the replica that reads it holds the same items with the same ids, and
derives the same history for the LLM.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.pipeline.messages.generation import ChatMessage
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.playback import Playback
from speech_to_speech.realtime.sessions.store.base import Snapshot
from speech_to_speech.realtime.sessions.store.state import read_state, state_json

TEXT = st.text(alphabet="abc xyz.", min_size=0, max_size=12)
OPS = st.lists(st.one_of(
    st.tuples(st.just("user"), TEXT),
    st.tuples(st.just("assistant"), TEXT),
    st.tuples(st.just("call"), TEXT),
    st.tuples(st.just("output"), TEXT),
    st.tuples(st.sampled_from(["exclude", "withdraw", "delete"]), st.integers(0, 40)),
    st.tuples(st.just("heard"), st.integers(0, 40)),
), max_size=40)


def _item(serial: int, kind: str, text: str) -> dict[str, Any]:
    head = {"id": f"item_{serial}", "object": "realtime.item", "status": "completed"}
    if kind == "user":
        return {**head, "type": "message", "role": "user", "content": [{"type": "input_audio", "transcript": text}]}
    if kind == "assistant":
        return {**head, "type": "message", "role": "assistant",
                "content": [{"type": "output_audio", "transcript": text}]}
    if kind == "call":
        return {**head, "type": "function_call", "call_id": f"call_{serial}", "name": "lookup", "arguments": text}
    return {**head, "type": "function_call_output", "call_id": f"call_{serial - 1}", "output": text}


def _history(conversation: Conversation, playback: Playback) -> tuple[ChatMessage, ...]:
    return conversation.history(said=playback.history_text)


@given(OPS, st.integers(10, 30))
def test_a_conversation_read_back_from_the_store_has_the_same_items_and_history(
        ops: list[tuple[str, Any]], max_items: int) -> None:
    conversation = Conversation(max_items)
    heard: dict[str, str] = {}  # what the old replica's ledger said of answers heard in part
    for serial, (kind, value) in enumerate(ops):
        ids = [item["id"] for item in conversation.export().items]
        if kind in ("exclude", "withdraw", "delete", "heard"):
            if not ids:
                continue
            target = ids[value % len(ids)]
            if kind == "exclude":
                conversation.exclude([target])
            elif kind == "withdraw":
                conversation.withdraw(target)
            elif kind == "delete":
                conversation.delete(target)
            else:
                heard[target] = target[: value % 5]
        else:
            conversation.add(_item(serial, kind, value))
    old = Playback(conversation, lambda event: None)
    old.restore(heard)
    written = state_json(Snapshot({"id": "sess_1"}, conversation.export(old.history_text), None, "conv_1", ()))

    stored = read_state(written, None)
    restored = Conversation(max_items)
    restored.load(stored.conversation)
    new = Playback(restored, lambda event: None)
    new.restore(stored.conversation.said)

    assert restored.export(new.history_text) == conversation.export(old.history_text)
    assert _history(restored, new) == _history(conversation, old)
    assert all(restored.withdrawn(item_id) for item_id in conversation.export().withdrawn)
    assert stored.conversation_id == "conv_1" and stored.session == {"id": "sess_1"}


def test_a_state_from_before_the_items_were_stored_is_read_as_items_and_a_lost_answer_leaves_the_history() -> None:
    history = [{"role": "user", "content": "Hi.", "tool_calls": [], "tool_call_id": None},
               {"role": "assistant", "content": "", "tool_calls": [{"call_id": "c1", "name": "f", "arguments": "{}"}],
                "tool_call_id": None},
               {"role": "tool", "content": "42", "tool_calls": [], "tool_call_id": "c1"},
               {"role": "assistant", "content": "It is 42", "tool_calls": [], "tool_call_id": None}]
    written = json.dumps({"session": {"id": "s"}, "history": history, "last_client_event_id": "evt_9"})
    kept = read_state(written, None)
    assert [item["type"] for item in kept.conversation.items] == [
        "message", "function_call", "function_call_output", "message"]
    assert kept.response_items == () and kept.last_client_event_id == "evt_9"
    conversation = Conversation()
    conversation.load(kept.conversation)
    assert [m.content for m in conversation.history()] == ["Hi.", "", "42", "It is 42"]

    lost = read_state(written, {"id": "resp_1"})  # a response was in the making: its answer is the last item
    assert lost.response_items == (lost.conversation.items[-1]["id"],)
