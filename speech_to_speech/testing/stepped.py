"""A pipeline unit whose stages run when told to, one output at a time, on the caller's thread.

Property tests use it to explore interleavings that threads produce only by
chance: which stage moves next, and when the send loop delivers, is the
test's choice. Each stage runs its real handler code (``BaseHandler.outputs``),
so staleness checks, sentinels and ordering are the production ones; only
the scheduling is replaced.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

from speech_to_speech.realtime.service.realtime_service import RealtimeService
from speech_to_speech.realtime.service.send_loop import next_item
from speech_to_speech.units.stages import StageBuilders
from speech_to_speech.units.unit import PipelineUnit


class SteppedUnit(PipelineUnit):
    """A PipelineUnit that is never started: :meth:`step` advances one stage by one output."""

    def __init__(self, builders: StageBuilders, **kwargs: Any) -> None:
        super().__init__(0, builders, **kwargs)
        self._in_progress: dict[str, Iterator[Any]] = {}
        self.started = True  # healthy() asks; the stages run when stepped, not on threads

    def stages_with_work(self) -> list[str]:
        return [name for name, handler in self.stages.by_name().items()
                if name in self._in_progress or not handler.queue_in.empty()]

    def step(self, stage: str) -> bool:
        """Let ``stage`` take its next input or produce its next output; False if it had nothing to do."""
        handler = self.stages.by_name()[stage]
        outputs = self._in_progress.get(stage)
        if outputs is None:
            try:
                item = handler.queue_in.get_nowait()
            except queue.Empty:
                return False
            outputs = self._in_progress[stage] = handler.outputs(item)
        try:
            output = next(outputs)
        except StopIteration:
            del self._in_progress[stage]
            return True
        handler.emit(output)
        return True

    def deliver(self, service: RealtimeService) -> bool:
        """One pass of the send loop: dispatch the next output item, text side first."""
        item = next_item(self)
        if item is None:
            return False
        service.dispatch_pipeline_item(item)
        return True

    def run_until_quiet(self, service: RealtimeService, max_steps: int = 100_000) -> None:
        """Step every stage in turn and deliver everything, until nothing is left to do."""
        for _ in range(max_steps):
            moved = [self.step(stage) for stage in self.stages_with_work()]
            delivered = self.deliver(service)
            if not any(moved) and not delivered:
                return
        raise AssertionError(f"the unit was still busy after {max_steps} steps")
