"""The duplicate tool follow-up extension.

A client that runs tools sends one automatic ``response.create`` after the
results, marked with ``s2s_tool_followup_call_ids``. If a completed answer's
model input already held those results, that follow-up would repeat it: the
server reports what each completed answer consumed (``s2s_tool_input_call_ids``
on ``response.done``) and remembers the last 1,024 consumed ids per
connection, independently of the chat history, to reject late duplicates.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

FOLLOWUP_CALL_IDS_KEY = "s2s_tool_followup_call_ids"
INPUT_CALL_IDS_KEY = "s2s_tool_input_call_ids"
MAX_REMEMBERED = 1024
METADATA_VALUE_LIMIT = 512


class ToolResultLedger:
    def __init__(self, limit: int = MAX_REMEMBERED) -> None:
        self.limit = limit
        self._answered: OrderedDict[str, None] = OrderedDict()

    def answered(self, call_ids: tuple[str, ...] | list[str]) -> None:
        for call_id in call_ids:
            self._answered[call_id] = None
            self._answered.move_to_end(call_id)
        while len(self._answered) > self.limit:
            self._answered.popitem(last=False)  # the oldest acknowledgement expires

    def all_answered(self, call_ids: list[str]) -> bool:
        return bool(call_ids) and all(call_id in self._answered for call_id in call_ids)


def encode_call_ids(call_ids: tuple[str, ...] | list[str]) -> str:
    """A JSON list that fits the metadata value limit, keeping the most recent ids."""
    kept = list(call_ids)
    while kept and len(json.dumps(kept)) > METADATA_VALUE_LIMIT:
        kept.pop(0)
    return json.dumps(kept)


def followup_call_ids(metadata: dict[str, Any] | None) -> list[str]:
    """The call ids an automatic follow-up create names, or [] for an ordinary create."""
    return decode_call_ids((metadata or {}).get(FOLLOWUP_CALL_IDS_KEY))


def decode_call_ids(raw: Any) -> list[str]:
    """A metadata value written by ``encode_call_ids`` (anything else reads as no ids)."""
    if not isinstance(raw, str):
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
