"""Keys our extensions put in a response's ``metadata`` (a map of strings, values of at most 512 characters)."""

from __future__ import annotations

TIMINGS_KEY = "s2s_timings"  # response.done, with the timings extension: the stage marks
TURN_DETECTION_KEY = "s2s_turn_detection"  # response.done, with the timings extension: the turn decision
