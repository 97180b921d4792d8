"""When tool calls run, when their outputs go back, and the one follow-up after them.

Rules (the spec's "Packaged Python client tools"):
- a call starts on ``response.function_call_arguments.done``, as a task off the
  receive loop, so tools run while the acknowledgement is still being spoken;
- outputs are submitted in ``output_index`` order (from
  ``response.output_item.added``, else the origin's ``response.done`` output);
- one follow-up ``response.create`` (marked ``s2s_tool_followup_call_ids``)
  after the origin completed, never while the user is speaking or another
  response is active; a cancelled/incomplete/failed origin cancels whatever it
  has not submitted yet;
- a completed answer whose ``s2s_tool_input_call_ids`` held a result already
  answered it: no follow-up for that one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech.client.tools import ToolCaller, ToolOutcome
from speech_to_speech.protocol import Event
from speech_to_speech.protocol.error_codes import (
    ACTIVE_RESPONSE,
    TOOL_FOLLOWUP_ALREADY_ANSWERED,
    TOOL_FOLLOWUP_USER_INPUT_PENDING,
)
from speech_to_speech.protocol.metadata import (
    FOLLOWUP_CALL_IDS_KEY,
    INPUT_CALL_IDS_KEY,
    decode_call_ids,
    encode_call_ids,
)

log = logging.getLogger(__name__)



@dataclass
class _Call:
    call_id: str
    name: str
    task: asyncio.Task[ToolOutcome] | None = None
    outcome: ToolOutcome | None = None
    submitted: bool = False


@dataclass
class _Origin:
    """A response that asked for tool calls."""

    response_id: str
    slots: dict[int, str] = field(default_factory=dict)  # output_index -> call_id
    names: dict[str, str] = field(default_factory=dict)  # call_id -> name, from the added item
    calls: dict[str, _Call] = field(default_factory=dict)
    status: str | None = None  # its response.done status once known

    def pending(self) -> bool:
        return any(not call.submitted for call in self.calls.values())


class ToolCoordinator:
    def __init__(self, caller: ToolCaller, send: Callable[[Event], str],
                 on_update: Callable[[str, str, str, str], None] | None = None) -> None:
        """``send`` queues a client event, returning its event_id; ``on_update(call_id, name, state, arguments)``."""
        self.caller = caller
        self._send = send
        self._on_update = on_update or (lambda call_id, name, state, arguments: None)
        self._origins: dict[str, _Origin] = {}
        self._unanswered: list[str] = []  # submitted results no answer has included yet
        self._wants_followup = False
        self._user_speaking = False
        self._await_user_input = False  # the server asked us to wait for the user's turn
        self._active_response: str | None = None
        self._inflight: tuple[str, list[str]] | None = None  # (event_id, call ids) of our create
        self._ours: str | None = None  # the response that may be answering our create
        self._server_echoes = False  # the server echoes response metadata (ours does)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.followups_sent: list[list[str]] = []  # every automatic create, including refused ones
        self._serial = itertools.count()

    # ------------------------------------------------------------ events

    def handle(self, event: Event) -> None:
        kind = event.get("type")
        if kind == "response.created":
            self._response_created(event.get("response") or {})
        elif kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") == "function_call" and isinstance(event.get("output_index"), int):
                origin = self._origin(str(event.get("response_id")))
                origin.slots[event["output_index"]] = str(item.get("call_id"))
                origin.names[str(item.get("call_id"))] = str(item.get("name") or "")
        elif kind == "response.function_call_arguments.done":
            self._start_call(event)
        elif kind == "response.done":
            self._response_done(event.get("response") or {})
        elif kind == "input_audio_buffer.speech_started":
            self._user_speaking = True
        elif kind == "input_audio_buffer.committed":
            self._user_speaking = False
            self._maybe_followup()
        elif kind == "conversation.item.input_audio_transcription.completed":
            self._await_user_input = False
            self._maybe_followup()
        elif kind == "error":
            self._error(event.get("error") or {})

    def _origin(self, response_id: str) -> _Origin:
        return self._origins.setdefault(response_id, _Origin(response_id))

    def _response_created(self, response: Event) -> None:
        self._active_response = str(response.get("id"))
        if self._inflight is None:
            return
        if (response.get("metadata") or {}).get(FOLLOWUP_CALL_IDS_KEY):
            self._ours, self._server_echoes = self._active_response, True
        elif self._ours is None and not self._server_echoes:
            # A server that does not echo metadata: this may be ours; a rejection would come before its done.
            self._ours = self._active_response

    def _start_call(self, event: Event) -> None:
        origin = self._origin(str(event.get("response_id")))
        call_id = str(event.get("call_id"))
        if call_id in origin.calls:
            return
        name = str(event.get("name") or origin.names.get(call_id, ""))
        arguments = str(event.get("arguments") or "")
        call = _Call(call_id, name)
        origin.calls[call_id] = call
        call.task = asyncio.create_task(self.caller.call(call_id, name, arguments),
                                        name=f"tool-{name}-{next(self._serial)}")
        self._tasks.add(call.task)
        call.task.add_done_callback(lambda task: self._finished(origin, call, task))
        self._on_update(call_id, name, "running", arguments)

    def _finished(self, origin: _Origin, call: _Call, task: asyncio.Task[ToolOutcome]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        call.outcome = task.result()
        self._on_update(call.call_id, call.name, "error" if call.outcome.error else "done", "")
        self._flush(origin)
        self._maybe_followup()

    def _response_done(self, response: Event) -> None:
        response_id = str(response.get("id"))
        status = str(response.get("status"))
        if self._active_response == response_id:
            self._active_response = None
        metadata = response.get("metadata") or {}
        if self._inflight is not None and (response_id == self._ours or metadata.get(FOLLOWUP_CALL_IDS_KEY)):
            # Our follow-up ran (whatever its status, the results are in the history now).
            self._answered(self._inflight[1])
            self._inflight = self._ours = None
        if status == "completed" and response.get("output"):
            self._answered(decode_call_ids(metadata.get(INPUT_CALL_IDS_KEY)))
        origin = self._origins.get(response_id)
        if origin is not None:
            origin.status = status
            if status == "completed":
                self._order_from_output(origin, response.get("output") or [])
                self._flush(origin)
            else:
                self._cancel_unsubmitted(origin)
        self._maybe_followup()

    def _error(self, error: Event) -> None:
        if self._inflight is None or error.get("event_id") != self._inflight[0]:
            return
        _, ids = self._inflight
        self._inflight = self._ours = None
        code = error.get("code")
        if code == TOOL_FOLLOWUP_ALREADY_ANSWERED:
            self._answered(ids)
        elif code == TOOL_FOLLOWUP_USER_INPUT_PENDING:
            self._await_user_input = True
        elif code != ACTIVE_RESPONSE:  # busy: retried after that response's done
            log.warning("tool follow-up rejected: %s", error.get("message"))
            self._answered(ids)

    # ------------------------------------------------------------ submission

    def _order_from_output(self, origin: _Origin, output: list[Event]) -> None:
        """Servers that skip response.output_item.added: the terminal output is the order."""
        if origin.slots:
            return
        for index, item in enumerate(output):
            if item.get("type") == "function_call":
                origin.slots[index] = str(item.get("call_id"))
        for call_id in origin.calls:  # neither event named it: keep arrival order
            if call_id not in origin.slots.values():
                origin.slots[max(origin.slots, default=-1) + 1] = call_id

    def _flush(self, origin: _Origin) -> None:
        """Submit finished outputs in output_index order, stopping at the first unfinished one."""
        if origin.status not in (None, "completed"):
            return
        for index in sorted(origin.slots):
            call = origin.calls.get(origin.slots[index])
            if call is None:
                if origin.status == "completed":
                    continue  # an item that never got its arguments: nothing to wait for
                return
            if call.submitted:
                continue
            if call.outcome is None:
                return
            self._submit(call.outcome)
            call.submitted = True

    def _submit(self, outcome: ToolOutcome) -> None:
        self._send({"type": "conversation.item.create",
                    "item": {"type": "function_call_output", "call_id": outcome.call_id, "output": outcome.output}})
        self._unanswered.append(outcome.call_id)
        self._wants_followup = self._wants_followup or outcome.create_response

    def _cancel_unsubmitted(self, origin: _Origin) -> None:
        for call in origin.calls.values():
            if not call.submitted:
                call.submitted = True  # settled: it will never be sent
                if call.task is not None and not call.task.done():
                    call.task.cancel()
                self._on_update(call.call_id, call.name, "cancelled", "")
        # Its submitted results are in the history; the user's next turn answers them.
        submitted = set(origin.calls)
        self._answered([call_id for call_id in self._unanswered if call_id in submitted])
        del self._origins[origin.response_id]

    def _answered(self, call_ids: list[str]) -> None:
        answered = set(call_ids)
        self._unanswered = [call_id for call_id in self._unanswered if call_id not in answered]
        if not self._unanswered:
            self._wants_followup = False

    def _maybe_followup(self) -> None:
        if not self._wants_followup or self._inflight is not None or self._active_response is not None:
            return
        if self._user_speaking or self._await_user_input:
            return
        origins = list(self._origins.values())
        if any(origin.status is None or origin.pending() for origin in origins):
            return  # an origin still running, or outputs still to submit
        for origin in origins:
            del self._origins[origin.response_id]
        ids = list(self._unanswered)
        event_id = self._send({"type": "response.create",
                               "response": {"metadata": {FOLLOWUP_CALL_IDS_KEY: encode_call_ids(ids)}}})
        self._inflight = (event_id, ids)
        self.followups_sent.append(ids)

    # ------------------------------------------------------------ lifecycle

    @property
    def busy(self) -> bool:
        """Tools still running, outputs unsubmitted, or a follow-up still owed."""
        return bool(self._tasks) or any(o.pending() for o in self._origins.values()) or (
            self._wants_followup or self._inflight is not None)

    async def close(self) -> None:
        """Cancel outstanding handlers (disconnect or shutdown)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
