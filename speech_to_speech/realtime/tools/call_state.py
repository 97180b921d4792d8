"""The life of a response's server-run tool calls, as a pure state machine (no I/O, no clock).

A response that calls MCP tools goes through rounds: the model's request
runs and may start calls; once the request has ended and every call of the
round has an outcome, the model is asked again with the results (a
follow-up) under the same response; a round with no call ends the response.
Around that, anything may happen at any time: a call returns, fails or
times out, the model's request ends or fails, the user speaks over it
(``turn_detected``), the client cancels (``client_cancelled``), a result
comes after the turn moved on.

:class:`ToolTurn` takes each of those as an event and says what to do
(:class:`Action`). Its promises, checked by the property tests
(tests/realtime/test_tool_call_properties.py): the response ends exactly
once; nothing is asked of the model after it ended; when it ends no call is
left running unless the user spoke over it (the call is then *detached*: its
result is kept for the conversation, never answered in this response);
every outcome is taken once (a second, late one is ignored); the follow-ups
are bounded; and a turn whose request ended and whose calls all came back
has ended or asked its follow-up (it cannot wait for nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from speech_to_speech.pipeline.messages.generation import ResponseStatus

# Model passes after the first within one response: a model that keeps calling tools is stopped, not looped.
MAX_FOLLOW_UPS = 3

CallStatus = Literal["running", "succeeded", "failed", "timed_out", "cancelled", "detached", "awaiting_approval"]
OUTCOMES = ("succeeded", "failed", "timed_out")


# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class CallStarted:
    call_id: str


@dataclass(frozen=True)
class CallAwaitsApproval:
    """The call waits for the user: it is answered in a later response, never in this one."""

    call_id: str


@dataclass(frozen=True)
class CallReturned:
    call_id: str
    ok: bool


@dataclass(frozen=True)
class CallTimedOut:
    call_id: str


@dataclass(frozen=True)
class RequestEnded:
    """The model's current request ended (its ``status``: completed, cancelled, incomplete, failed)."""

    status: ResponseStatus


@dataclass(frozen=True)
class TurnEnded:
    """The response ended from outside (speech over it, ``response.cancel``, a stall, the session's end)."""

    reason: str


Event = CallStarted | CallAwaitsApproval | CallReturned | CallTimedOut | RequestEnded | TurnEnded


# ---------------------------------------------------------------- actions


@dataclass(frozen=True)
class AskFollowUp:
    """Ask the model again, under the same response, with the results so far."""


@dataclass(frozen=True)
class Finish:
    """End the response with ``status`` (the machine's own end: not for a :class:`TurnEnded`)."""

    status: ResponseStatus


@dataclass(frozen=True)
class StopCall:
    call_id: str


@dataclass(frozen=True)
class ReportOutcome:
    """Tell the client the call's outcome (its item's events) while the response is open."""

    call_id: str


@dataclass(frozen=True)
class KeepOutcome:
    """A detached call came back: keep its outcome in the conversation for the next answer."""

    call_id: str


Action = AskFollowUp | Finish | StopCall | ReportOutcome | KeepOutcome


@dataclass
class ToolTurn:
    """One response's rounds of tool calls. ``step`` is the only way in; it never raises."""

    request_open: bool = True
    ended: bool = False
    follow_ups: int = 0
    calls: dict[str, CallStatus] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)  # outcomes the model was given already

    def step(self, event: Event) -> list[Action]:
        if isinstance(event, CallStarted):
            return self._started(event.call_id)
        if isinstance(event, CallAwaitsApproval):
            if not self.ended and event.call_id not in self.calls:
                self.calls[event.call_id] = "awaiting_approval"
            return []
        if isinstance(event, CallReturned | CallTimedOut):
            return self._outcome(event)
        if isinstance(event, RequestEnded):
            return self._request_ended(event.status)
        return self._turn_ended(event.reason)

    def _started(self, call_id: str) -> list[Action]:
        if call_id in self.calls:
            return []
        if self.ended:  # a call of a request that outlived its response: it must not run
            self.calls[call_id] = "cancelled"
            return [StopCall(call_id)]
        self.calls[call_id] = "running"
        return []

    def _outcome(self, event: CallReturned | CallTimedOut) -> list[Action]:
        status = self.calls.get(event.call_id)
        if status not in ("running", "detached"):
            return []  # unknown, or it has its outcome already (a late result): taken once
        outcome: CallStatus = "timed_out" if isinstance(event, CallTimedOut) else (
            "succeeded" if event.ok else "failed")
        self.calls[event.call_id] = outcome
        if status == "detached":
            return [KeepOutcome(event.call_id)]
        return [ReportOutcome(event.call_id), *self._advance()]

    def _request_ended(self, status: ResponseStatus) -> list[Action]:
        if self.ended or not self.request_open:
            return []
        self.request_open = False
        if status != "completed":
            return [*self._stop_running(), *self._end(status)]
        return self._advance()

    def _turn_ended(self, reason: str) -> list[Action]:
        if self.ended:
            return []
        self.ended = True
        if reason == "turn_detected":  # the user spoke over it: the work goes on, its result is kept
            for call_id, status in self.calls.items():
                if status == "running":
                    self.calls[call_id] = "detached"
            return []
        return self._stop_running()

    def _stop_running(self) -> list[Action]:
        stopped = [call_id for call_id, status in self.calls.items() if status == "running"]
        for call_id in stopped:
            self.calls[call_id] = "cancelled"
        return [StopCall(call_id) for call_id in stopped]

    def _advance(self) -> list[Action]:
        """After the request ended, or a call came back: the next round, or the end."""
        if self.ended or self.request_open or "running" in self.calls.values():
            return []
        fresh = {c for c, s in self.calls.items() if s in OUTCOMES} - self.answered
        if fresh and self.follow_ups < MAX_FOLLOW_UPS:
            self.answered |= fresh
            self.follow_ups += 1
            self.request_open = True
            return [AskFollowUp()]
        return self._end("completed")

    def _end(self, status: ResponseStatus) -> list[Action]:
        self.ended = True
        return [Finish(status)]

    @property
    def running(self) -> list[str]:
        return [call_id for call_id, status in self.calls.items() if status in ("running", "detached")]
