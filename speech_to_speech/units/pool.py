"""PipelinePool: claim, release (with drain), quarantine and rebuild of units."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from speech_to_speech.memory import AfterSessions
from speech_to_speech.units.unit import PipelineUnit

log = logging.getLogger(__name__)

SlotState = Literal["idle", "busy", "draining", "quarantined"]
REBUILD_MAX_BACKOFF_S = 60.0


@dataclass(frozen=True)
class SlotStatus:
    index: int
    state: SlotState
    healthy: bool
    rebuilds: int


class PipelinePool:
    """Owns ``size`` pipeline units; one session holds one unit at a time.

    A released unit is drained (a SessionEnd must come out of both branches)
    in the background. A unit that does not drain in time, or whose threads
    died, is quarantined and replaced by a freshly built one; a build that
    fails (a remote model down, memory short) is retried with exponential
    backoff, from ``rebuild_backoff_s`` up to ``REBUILD_MAX_BACKOFF_S``, until
    it succeeds or the pool closes.
    """

    def __init__(
        self,
        size: int,
        build_unit: Callable[[int], PipelineUnit],
        release_timeout_s: float = 5.0,
        rebuild_backoff_s: float = 1.0,
        on_close: Callable[[], None] | None = None,
        sizing: str = "",
    ) -> None:
        self.sizing = sizing or f"{size} unit(s)"  # how the count was chosen, for the log and GET /v1/pool
        self._build_unit = build_unit
        self._on_close = on_close  # frees what the units shared (the turn detector's threads)
        self._release_timeout_s = release_timeout_s
        self._rebuild_backoff_s = rebuild_backoff_s
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._units: list[PipelineUnit] = []
        self._state: list[SlotState] = []
        self._rebuilds = [0] * size
        self._memory = AfterSessions()
        for index in range(size):
            unit = build_unit(index)
            unit.start()
            self._units.append(unit)
            self._state.append("idle")

    @property
    def size(self) -> int:
        return len(self._units)

    def claim(self) -> PipelineUnit | None:
        """An idle, healthy unit, now busy; None when every unit is taken."""
        with self._lock:
            for index, unit in enumerate(self._units):
                if self._state[index] != "idle":
                    continue
                if not unit.healthy():
                    self._quarantine_locked(index, f"dead stages {unit.dead_stages()}")
                    continue
                self._state[index] = "busy"
                unit.reset_for_new_session()
                return unit
        return None

    def release(self, unit: PipelineUnit, wait: bool = False) -> None:
        """Hand a unit back. It becomes idle once drained, or is quarantined."""
        with self._lock:
            if self._units[unit.index] is not unit or self._state[unit.index] != "busy":
                return
            self._state[unit.index] = "draining"
        worker = threading.Thread(
            target=self._drain, args=(unit,), name=f"drain-unit{unit.index}", daemon=True
        )
        worker.start()
        if wait:
            worker.join()

    def _drain(self, unit: PipelineUnit) -> None:
        # A unit with a dead stage can never drain: replace it now, not after the timeout.
        drained = False
        if unit.healthy():
            token = unit.begin_session_end()
            drained = unit.wait_drained(token, self._release_timeout_s)
        with self._lock:
            if self._units[unit.index] is not unit:
                return
            if drained and unit.healthy():
                unit.reset_for_new_session()
                self._state[unit.index] = "idle"
            else:
                self._quarantine_locked(unit.index, "did not drain" if not drained else "dead stages")
                return
            in_use = sum(state in ("busy", "draining") for state in self._state)
        self._memory.session_ended(in_use)  # the session's buffers, freed by now, go back to the system

    def _quarantine_locked(self, index: int, why: str) -> None:
        log.warning("pipeline unit %d quarantined (%s); rebuilding", index, why)
        self._state[index] = "quarantined"
        threading.Thread(
            target=self._rebuild, args=(index, self._units[index]), name=f"rebuild-unit{index}", daemon=True
        ).start()

    def _rebuild(self, index: int, old: PipelineUnit) -> None:
        old.stop(timeout=0.5)  # a hung stage's thread is left behind (daemon); its unit is not reused
        delay = self._rebuild_backoff_s
        while True:
            try:
                unit = self._build_unit(index)
                unit.start()
                break
            except Exception:
                log.exception("rebuilding pipeline unit %d failed; retrying in %.1f s", index, delay)
            if self._closed.wait(delay):
                return
            delay = min(delay * 2, REBUILD_MAX_BACKOFF_S)
        if self._closed.is_set():
            unit.stop(timeout=0.5)
            return
        with self._lock:
            self._units[index] = unit
            self._rebuilds[index] += 1
            self._state[index] = "idle"

    def status(self) -> list[SlotStatus]:
        with self._lock:
            return [
                SlotStatus(i, self._state[i], self._units[i].healthy(), self._rebuilds[i])
                for i in range(len(self._units))
            ]

    def units(self) -> list[PipelineUnit]:
        with self._lock:
            return list(self._units)

    def close(self) -> None:
        self._closed.set()
        for unit in self.units():
            unit.stop(timeout=1.0)
        if self._on_close is not None:
            self._on_close()
