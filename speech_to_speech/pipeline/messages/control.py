"""Items every queue carries: the session's soft reset, the unit's stop, a stage's failure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from speech_to_speech.pipeline.messages.ownership import AlwaysDelivered


@dataclass(frozen=True)
class SessionEnd:
    """Soft reset: each handler clears its per-session state and forwards it.

    Reaching the end of the pipeline proves the unit drained.
    """

    token: int = 0


@dataclass(frozen=True)
class PipelineEnd:
    """Stop the handler threads of a unit; forwarded so every stage stops."""


@dataclass(frozen=True)
class StageError(AlwaysDelivered):
    """A handler failed on an item; reported downstream instead of dying."""

    stage: str
    message: str
    generation: int | None = None
    response_id: str | None = None
    item_id: str | None = None  # the user turn it was working on (STT)
    # The work will be done again (a speculative pass): nothing the client waits for is lost.
    retried: bool = False


# On every queue: the session's soft reset, the unit's stop, and a stage's report of a failure. Every stage
# forwards the first two as they come (pipeline/handler.py), and may make the third.
Control: TypeAlias = SessionEnd | PipelineEnd | StageError
