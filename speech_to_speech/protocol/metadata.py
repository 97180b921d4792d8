"""Keys our extensions put in ``metadata``, and the encoding of tool call ids there.

Realtime metadata values are strings of at most 512 characters (stock clients
validate them so), so structured figures travel as JSON strings.

The duplicate tool follow-up: a client that runs tools sends one automatic
``response.create`` after the results, marked with ``s2s_tool_followup_call_ids``;
each completed answer's ``response.done`` names the results its model input
held under ``s2s_tool_input_call_ids``, so a follow-up that would repeat an
answer is refused (``tool_followup_already_answered``).
"""

from __future__ import annotations

import json
from typing import Any, Literal

# response.done, with the timings extension: the stage marks and the turn detector's decision.
TIMINGS_KEY = "s2s_timings"
TURN_DETECTION_KEY = "s2s_turn_detection"
# Its ``outcome`` (also a label of /metrics' s2s_turn_decisions): see pipeline.messages.turn_taking.TurnDecision.
TurnOutcome = Literal["finished", "unfinished", "timed_out", "disputed", "no_answer"]
# With the timings extension: the language the STT heard the turn in (absent where it did not say).
HEARD_LANGUAGE_KEY = "s2s_heard_language"
# response.done and each response.output_audio.delta: the playback figures of the response's audio.
PLAYBACK_KEY = "playback"
# response.output_audio.delta: the item's audio so far (ms) and its new text marks.
AUDIO_DURATION_KEY = "audio_duration_ms"
AUDIO_TEXT_MARKS_KEY = "audio_text_marks"
# The tool follow-up: the ids a follow-up create answers, and those a finished answer consumed.
FOLLOWUP_CALL_IDS_KEY = "s2s_tool_followup_call_ids"
INPUT_CALL_IDS_KEY = "s2s_tool_input_call_ids"

METADATA_VALUE_LIMIT = 512


def encode_call_ids(call_ids: tuple[str, ...] | list[str]) -> str:
    """A JSON list that fits the metadata value limit, keeping the most recent ids."""
    kept = list(call_ids)
    while kept and len(json.dumps(kept)) > METADATA_VALUE_LIMIT:
        kept.pop(0)
    return json.dumps(kept)


def decode_call_ids(raw: Any) -> list[str]:
    """A metadata value written by ``encode_call_ids`` (anything else reads as no ids)."""
    if not isinstance(raw, str):
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def followup_call_ids(metadata: dict[str, Any] | None) -> list[str]:
    """The call ids an automatic follow-up create names, or [] for an ordinary create."""
    return decode_call_ids((metadata or {}).get(FOLLOWUP_CALL_IDS_KEY))
