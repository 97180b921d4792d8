"""The session's ``truncation`` over the wire: echoed, validated like the other fields, and given to the LLM;
and the whole conversation, not the last turns, reaches it."""

from __future__ import annotations

from typing import Any

import pytest

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest, Truncation
from speech_to_speech.testing.event_matchers import is_error_for

from .conftest import ClientFactory

RETENTION = {"type": "retention_ratio", "retention_ratio": 0.5, "token_limits": {"post_instructions": 2000}}


async def test_truncation_is_echoed_and_reaches_the_model(connect: ClientFactory,
                                                          llm_requests: list[GenerateResponseRequest]) -> None:
    async with connect() as client:
        created = await client.update_session({})
        assert created["session"]["truncation"] == "auto"
        await client.send("response.create")
        await client.wait_for("response.done")

        updated = await client.update_session({"truncation": RETENTION})
        assert updated["session"]["truncation"] == RETENTION
        await client.send("response.create")
        await client.wait_for("response.done")

        disabled = await client.update_session({"truncation": "disabled"})
        assert disabled["session"]["truncation"] == "disabled"
        await client.send("response.create")
        await client.wait_for("response.done")
    assert [r.truncation for r in llm_requests] == [Truncation(0.8), Truncation(0.5, 2000), Truncation(None)]


@pytest.mark.parametrize("value", [
    "sometimes",
    {"type": "retention_ratio", "retention_ratio": 1.5},
    {"type": "retention_ratio"},
    {"type": "retention_ratio", "retention_ratio": 0.5, "token_limits": {"post_instructions": -1}},
    {"type": "tokens", "retention_ratio": 0.5},
    7,
])
async def test_a_malformed_truncation_is_refused_and_changes_nothing(connect: ClientFactory, value: Any) -> None:
    async with connect() as client:
        await client.update_session({"truncation": RETENTION})
        event_id = await client.send("session.update", session={"type": "realtime", "truncation": value})
        error = await client.wait_for(is_error_for(event_id))
        assert error["error"]["type"] == "invalid_request_error"
        assert error["error"]["param"].startswith("session.truncation")
        after = await client.update_session({})
        assert after["session"]["truncation"] == RETENTION


async def test_the_model_is_given_every_turn_of_a_long_conversation(
        connect: ClientFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    """Thirty exchanges: the last request still holds the first, where a ten-turn window dropped it."""
    async with connect() as client:
        for turn in range(30):
            await client.send("conversation.item.create", item={
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": f"turn {turn}: my name is Oliver" if turn == 0
                             else f"turn {turn}"}]})
            await client.send("response.create")
            await client.wait_for("response.done")
    last = llm_requests[-1].messages
    assert sum(m.role == "user" for m in last) == 30
    assert last[0].content == "turn 0: my name is Oliver"
