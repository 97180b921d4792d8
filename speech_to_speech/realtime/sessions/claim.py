"""What a session holds while it runs: a place among its address's sessions and a pipeline unit.

Both are taken at the session gate (``SessionGate.session``, sessions/gate.py) and
each is given back exactly once, on every path: a refused or failed handshake,
a cancelled request, a session that ends. The two live apart: the place belongs
to the socket or call (a resumed session's new socket takes a place of its own),
the unit to the session, which may outlive its socket for ``disconnect_grace_s``.
So a session that starts takes its unit over (:meth:`UnitLease.keep`) and gives
it back when it ends; until then whoever entered the gate gives it back.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from speech_to_speech.units.pool import PipelinePool
from speech_to_speech.units.unit import PipelineUnit


class UnitLease:
    """A claimed unit; :meth:`release` hands it back to its pool once, however often it is called."""

    def __init__(self, pool: PipelinePool, unit: PipelineUnit) -> None:
        self.pool = pool
        self.unit = unit
        self.kept = False  # a session took it over: the session releases it, not the Entry
        self.released = False

    def keep(self) -> None:
        """A session owns the unit from now on: it releases it when it ends, whatever its socket does."""
        if self.released:
            raise RuntimeError(f"unit {self.unit.index} was released already")
        self.kept = True

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.pool.release(self.unit)


class Entry:
    """What got through the gate: a place among an address's sessions (none for a take-over, admitted
    already) and a unit lease (none for a socket that only resumes). :meth:`close` gives the place
    back once, and the unit unless a session kept it."""

    def __init__(self, leave: Callable[[], None] | None, lease: UnitLease | None = None) -> None:
        self._leave = leave
        self._lease = lease
        self.closed = False

    @property
    def lease(self) -> UnitLease:
        if self._lease is None:
            raise RuntimeError("this entry holds no unit")
        return self._lease

    def hold(self, lease: UnitLease) -> None:
        """The unit the gate claimed for this entry (after its place: the wait for a unit may be refused)."""
        if self._lease is not None or self.closed:
            raise RuntimeError("this entry cannot take a unit")
        self._lease = lease

    def move(self) -> Entry:
        """A new Entry holding what this one held; this one then holds nothing. For what outlives the
        request that entered the gate (a WebRTC call's session runs in a task of its own)."""
        moved = Entry(self._leave, self._lease)
        self._leave, self._lease = None, None
        return moved

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        leave, lease = self._leave, self._lease
        self._leave = self._lease = None
        try:
            if lease is not None and not lease.kept:
                lease.release()
        finally:
            if leave is not None:
                leave()

    def __enter__(self) -> Entry:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
