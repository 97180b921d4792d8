"""What a finished response reports in ``response.done``'s metadata.

Realtime metadata values are strings (stock clients validate them so), so
each structured figure goes in as a JSON string: the stage timings and the
turn detector's decision (the timings extension), the tool results the
answer included, and the playback figures of its audio.
"""

from __future__ import annotations

import json
import time
from typing import Any

from speech_to_speech.pipeline.messages.turn_taking import TurnDecision
from speech_to_speech.protocol.metadata import (
    HEARD_LANGUAGE_KEY,
    INPUT_CALL_IDS_KEY,
    PLAYBACK_KEY,
    TIMINGS_KEY,
    TURN_DETECTION_KEY,
    encode_call_ids,
)
from speech_to_speech.protocol.server_events.playback import PlaybackFigures
from speech_to_speech.realtime.conversation.response import ResponseState


def encode_turn_decision(decision: TurnDecision) -> str:
    """What the turn detector decided."""
    return json.dumps({"detector": decision.detector, "outcome": decision.outcome,
                       "probability": None if decision.probability is None else round(decision.probability, 4),
                       "inference_ms": decision.inference_ms, "words": decision.words,
                       "continuation": None if decision.continuation is None else round(decision.continuation, 4)})


def encode_marks(marks: dict[str, float]) -> str:
    """Monotonic stage marks as a JSON object of Unix epoch milliseconds."""
    offset = time.time() - time.monotonic()
    return json.dumps({name: round((mark + offset) * 1000.0, 1) for name, mark in marks.items() if mark})


def finished_metadata(response: ResponseState, *, timings: bool, answered_tool_results: bool,
                      playback: PlaybackFigures, heard_language: str | None = None) -> dict[str, Any]:
    """The response's own metadata plus what the server reports about it."""
    metadata: dict[str, Any] = dict(response.metadata or {})
    if timings:
        metadata[TIMINGS_KEY] = encode_marks(response.marks)
        if heard_language:
            metadata[HEARD_LANGUAGE_KEY] = heard_language
        if response.turn_decision is not None:
            metadata[TURN_DETECTION_KEY] = encode_turn_decision(response.turn_decision)
    if answered_tool_results:
        metadata[INPUT_CALL_IDS_KEY] = encode_call_ids(response.input_call_ids)
    metadata[PLAYBACK_KEY] = json.dumps(playback)
    return metadata
