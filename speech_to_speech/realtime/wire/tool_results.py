"""The server's half of the duplicate tool follow-up extension.

The server remembers the last 1,024 tool call ids that completed answers
consumed per connection, independently of the chat history, to reject late
duplicate follow-ups. The metadata keys and their encoding are part of the
wire contract, in :mod:`speech_to_speech.protocol.metadata`.
"""

from __future__ import annotations

from collections import OrderedDict

# The keys' and the encoding's old home: importing them from here keeps working for one release.
from speech_to_speech.protocol.metadata import (  # noqa: F401
    FOLLOWUP_CALL_IDS_KEY,
    INPUT_CALL_IDS_KEY,
    METADATA_VALUE_LIMIT,
    decode_call_ids,
    encode_call_ids,
    followup_call_ids,
)

MAX_REMEMBERED = 1024


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
