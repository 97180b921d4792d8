"""``GET /ready``: whether this replica can take a new session now, for a load balancer to route by.

``/health`` says the process is alive (a liveness probe restarts it when it
is not); ``/ready`` says whether a new session would be let in, so that a
balancer sends it elsewhere while this replica is full, shutting down, or
cut off from something a session needs. Each condition is a
:data:`ReadinessCheck`: an awaitable that gives None when all is well, or
the reason it is not. The app holds one :class:`Readiness` with the
built-in checks (the session gate open, a unit free); other parts register
their own (the session store: "session store unreachable").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

from speech_to_speech.realtime.sessions.gate import SessionGate
from speech_to_speech.units.pool import PipelinePool

ReadinessCheck = Callable[[], Awaitable[str | None]]

# A probe must answer before the balancer's own timeout: a check that hangs (a store that does not
# answer) counts as failed, with this in its reason, instead of holding the probe.
CHECK_TIMEOUT_S = 1.0


class Readiness:
    """The checks a replica must pass to take a session; ``reasons()`` runs them all, side by side."""

    def __init__(self, checks: Iterable[ReadinessCheck] = (), timeout_s: float = CHECK_TIMEOUT_S) -> None:
        self._checks = list(checks)
        self._timeout_s = timeout_s

    def register(self, check: ReadinessCheck) -> None:
        self._checks.append(check)

    async def reasons(self) -> list[str]:
        """Why a new session would not be served now, in the order the checks were registered (empty: ready)."""
        results = await asyncio.gather(*(self._run(check) for check in self._checks))
        return [reason for reason in results if reason is not None]

    async def _run(self, check: ReadinessCheck) -> str | None:
        name = getattr(check, "__name__", type(check).__name__)
        try:
            return await asyncio.wait_for(check(), self._timeout_s)
        except TimeoutError:
            return f"{name}: no answer within {self._timeout_s:g} s"
        except Exception as error:  # noqa: BLE001 - a check that fails is a reason, not a failed probe
            return f"{name}: {error!r}"


def reachability_check(what: str, reachable: Callable[[], Awaitable[bool]]) -> ReadinessCheck:
    """A check of a dependency that says whether it answers: ``"<what> unreachable"`` when it does not.

    ``readiness.register(reachability_check("session store", store.reachable))``.
    """

    async def check() -> str | None:
        try:
            return None if await reachable() else f"{what} unreachable"
        except Exception as error:  # noqa: BLE001 - the reason names the failure
            return f"{what} unreachable: {error!r}"

    return check


def admission_check(gate: SessionGate) -> ReadinessCheck:
    """Not ready once the gate stopped admitting (a shutdown began)."""

    async def admitting() -> str | None:
        return gate.stopped

    return admitting


def free_unit_check(pool: PipelinePool, can_evict: Callable[[], bool]) -> ReadinessCheck:
    """Not ready while no unit is idle and healthy, unless a detached session would give one up (``can_evict``)."""

    async def free_unit() -> str | None:
        slots = pool.status()
        if any(slot.state == "idle" and slot.healthy for slot in slots) or can_evict():
            return None
        return f"no free pipeline unit: none of {len(slots)} is idle"

    return free_unit
