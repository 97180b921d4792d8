"""The type of one Realtime event as both sides handle it: its JSON object."""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]
