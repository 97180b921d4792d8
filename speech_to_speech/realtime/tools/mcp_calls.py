"""MCP tool calls run by the server inside a response: their items, events, tasks and follow-ups.

When the model calls a tool of a session's MCP server, the response gets an
``mcp_call`` item (``response.output_item.added``, the arguments' delta and
done, ``response.mcp_call.in_progress``), the call runs on the server's
connection, and its outcome comes back as ``response.mcp_call.completed`` or
``.failed`` with the item's ``output`` or ``error``; then the model is asked
again under the same response, with the result in its history, and speaks
the answer. A call that needs the user's approval gets an
``mcp_approval_request`` item instead and runs once the client adds an
``mcp_approval_response`` approving it, in a response of its own.

Every decision (when to ask again, when to end, what a late result may do)
is :class:`~speech_to_speech.realtime.tools.call_state.ToolTurn`'s; this
module does what it says.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, ResponseDone
from speech_to_speech.protocol import error_codes
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.conversation import conversation_item_done
from speech_to_speech.protocol.server_events.mcp import (
    response_mcp_call_completed,
    response_mcp_call_failed,
)
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.response import ResponseState
from speech_to_speech.realtime.conversation.responses import Responses
from speech_to_speech.realtime.tools import call_state as cs
from speech_to_speech.realtime.tools.mcp_connection import McpFailure, McpTimeout
from speech_to_speech.realtime.tools.mcp_policy import needs_approval
from speech_to_speech.realtime.tools.mcp_servers import McpServers
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.mcp_tools import McpServerSpec

log = logging.getLogger(__name__)


@dataclass
class RunningCall:
    item: dict[str, Any]
    output_index: int
    spec: McpServerSpec
    task: asyncio.Task[None] | None = None


@dataclass
class Turn:
    response: ResponseState
    machine: cs.ToolTurn = field(default_factory=cs.ToolTurn)
    calls: dict[str, RunningCall] = field(default_factory=dict)


@dataclass(frozen=True)
class PendingApproval:
    spec: McpServerSpec
    name: str
    arguments: str


class McpCalls:
    """The server-run tool calls of one session (runs on the event loop)."""

    def __init__(self, servers: McpServers, responses: Responses, conversation: Conversation,
                 emit: Callable[[ServerEvent], None], *, call_timeout_s: float) -> None:
        self._servers = servers
        self._responses = responses
        self._conversation = conversation
        self._emit = emit
        self._timeout = call_timeout_s
        self._turns: dict[str, Turn] = {}  # by response id, while the response or a detached call lives
        self._approvals: dict[str, PendingApproval] = {}  # approval request id -> the call it would run
        self._approved: list[tuple[str, PendingApproval]] = []  # approved while another response ran

    # ------------------------------------------------------------ the model calls a tool

    def tool_call(self, response: ResponseState, part: AssistantToolCallPart) -> bool:
        """Run ``part`` if it names a tool of the response's MCP servers; False: it is a function call."""
        found = self._servers.find(self._responses.mcp_specs(response.options), part.name)
        if found is None:
            return False
        spec, tool = found
        turn = self._turns.setdefault(response.id, Turn(response))
        if needs_approval(spec, tool):
            self._ask_approval(turn, spec, part)
            return True
        self._start(turn, spec, part.name, part.arguments, approval_request_id=None)
        return True

    def _ask_approval(self, turn: Turn, spec: McpServerSpec, part: AssistantToolCallPart) -> None:
        item, events = turn.response.mcp_approval_request(spec.label, part.name, part.arguments,
                                                          self._conversation.last_id)
        self._approvals[item["id"]] = PendingApproval(spec, part.name, part.arguments)
        self._add_output(turn.response, item, events)
        turn.machine.step(cs.CallAwaitsApproval(item["id"]))

    def _start(self, turn: Turn, spec: McpServerSpec, name: str, arguments: str,
               approval_request_id: str | None) -> None:
        item, index, events = turn.response.mcp_call(spec.label, name, arguments, approval_request_id,
                                                     self._conversation.last_id)
        self._add_output(turn.response, item, events)
        call = turn.calls[item["id"]] = RunningCall(item, index, spec)
        self._apply(turn, turn.machine.step(cs.CallStarted(item["id"])))
        if turn.machine.calls.get(item["id"]) == "running":
            call.task = asyncio.get_running_loop().create_task(self._run(turn, call), name=f"mcp-call-{name}")

    async def _run(self, turn: Turn, call: RunningCall) -> None:
        event: cs.Event
        response, item_id = turn.response, call.item["id"]
        try:
            arguments = json.loads(call.item["arguments"] or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("the arguments are not a JSON object")
        except ValueError as error:
            response.call_failed(item_id, {"type": "tool_execution_error", "message": f"bad arguments: {error}"})
            event = cs.CallReturned(item_id, ok=False)
        else:
            connection = self._servers.connection(call.spec)
            try:
                if connection is None:
                    raise McpFailure({"type": "protocol_error", "code": -32000,
                                      "message": "the MCP server is not connected"})
                response.call_returned(item_id, await connection.call(call.item["name"], arguments, self._timeout))
                event = cs.CallReturned(item_id, ok=True)
            except McpTimeout as timeout:
                response.call_failed(item_id, timeout.error)
                event = cs.CallTimedOut(item_id)
            except McpFailure as error:
                response.call_failed(item_id, error.error)
                event = cs.CallReturned(item_id, ok=False)
        log.info("MCP call %s on %r: %s", call.item["name"], call.spec.label,
                 "ok" if call.item["error"] is None else call.item["error"]["message"])
        self._apply(turn, turn.machine.step(event))

    # ------------------------------------------------------------ what the machine says to do

    def _apply(self, turn: Turn, actions: list[cs.Action]) -> None:
        for action in actions:
            if isinstance(action, cs.ReportOutcome):
                self._report(turn, turn.calls[action.call_id])
            elif isinstance(action, cs.KeepOutcome):
                self._keep(turn.calls[action.call_id])
            elif isinstance(action, cs.StopCall):
                self._stop(turn, turn.calls[action.call_id])
            elif isinstance(action, cs.AskFollowUp):
                self._responses.follow_up(turn.response)
            elif isinstance(action, cs.Finish):
                self._responses.finish(action.status)
        if turn.machine.ended and not turn.machine.running:
            self._turns.pop(turn.response.id, None)

    def _report(self, turn: Turn, call: RunningCall) -> None:
        outcome = response_mcp_call_completed if call.item["error"] is None else response_mcp_call_failed
        self._emit(outcome(call.item["id"], call.output_index))
        self._item_done(turn.response, call)

    def _keep(self, call: RunningCall) -> None:
        """A call the user spoke over came back: its outcome joins the conversation, and is spoken if nothing
        else is being said or heard (else the next answer has it in its history)."""
        if call.item["id"] in self._conversation:
            self._emit(conversation_item_done(call.item))
        self._responses.speak_if_idle()

    def _stop(self, turn: Turn, call: RunningCall) -> None:
        if call.task is not None:
            call.task.cancel()
        turn.response.call_failed(call.item["id"], {"type": "tool_execution_error",
                                                    "message": "cancelled: the response ended"})
        if turn.response is self._responses.active:  # its last events, inside the response
            self._emit(response_mcp_call_failed(call.item["id"], call.output_index))
            self._item_done(turn.response, call)

    # ------------------------------------------------------------ the response around it

    def request_done(self, response: ResponseState, done: ResponseDone) -> bool:
        """The model's request of ``response`` ended: True if the calls decide what comes next."""
        turn = self._turns.get(response.id)
        if turn is None or turn.machine.ended:
            return False
        actions = turn.machine.step(cs.RequestEnded(done.status))
        if any(isinstance(a, cs.Finish) and a.status != "completed" for a in actions):
            # Not a plain end: the response ends as the request did, with its reason and error.
            self._apply(turn, [a for a in actions if not isinstance(a, cs.Finish)])
            self._responses.finish(done.status, done.reason, done.error)
            return True
        self._apply(turn, actions)
        return True

    def finishing(self, response: ResponseState, status: str, reason: str | None) -> None:
        """``response`` is about to end (any way): calls still running stop, or go on detached if the user
        spoke over them."""
        turn = self._turns.get(response.id)
        if turn is None or turn.machine.ended:
            return
        self._apply(turn, turn.machine.step(cs.TurnEnded(reason or status)))

    def finished(self) -> None:
        """A response ended: an approved call waiting for it may run now."""
        if self._approved and self._responses.active is None:
            approval_id, pending = self._approved.pop(0)
            self._run_approved(approval_id, pending)

    def holds_submit(self, response: ResponseState) -> bool:
        """The response runs an approved call before the model is asked (the machine asks it then)."""
        turn = self._turns.get(response.id)
        return turn is not None and turn.response is response and not turn.machine.request_open

    # ------------------------------------------------------------ approvals

    def check_approval(self, item: dict[str, Any], event_id: str | None) -> None:
        """Refuse an ``mcp_approval_response`` that answers no request of ours (before it is added)."""
        if item.get("type") == "mcp_approval_response" and item["approval_request_id"] not in self._approvals:
            raise RealtimeError(error_codes.MCP_APPROVAL_REQUEST_NOT_FOUND,
                                f"No pending MCP approval request {item['approval_request_id']!r}",
                                param="item.approval_request_id", event_id=event_id)

    def approval_answered(self, item: dict[str, Any]) -> None:
        """The client answered: an approved call runs (in a response of its own); a declined one is not run,
        and the model says so."""
        pending = self._approvals.pop(item["approval_request_id"], None)
        if pending is None:
            return
        if not item["approve"]:
            self._responses.speak_if_idle()
            return
        if self._responses.active is not None:
            self._approved.append((item["approval_request_id"], pending))
            return
        self._run_approved(item["approval_request_id"], pending)

    def _run_approved(self, approval_id: str, pending: PendingApproval) -> None:
        response = self._responses.open({}, submit=False)
        turn = self._turns[response.id] = Turn(response, cs.ToolTurn(request_open=False))
        self._start(turn, pending.spec, pending.name, pending.arguments, approval_request_id=approval_id)

    # ------------------------------------------------------------ items

    def _add_output(self, response: ResponseState, item: dict[str, Any], events: list[ServerEvent]) -> None:
        """``item``, just added to the response's output (``events`` say so), joins the conversation too."""
        if response.in_conversation:
            self._conversation.add(item)
        for event in events:
            self._emit(event)

    def _item_done(self, response: ResponseState, call: RunningCall) -> None:
        for event in response.item_done(call.item, call.output_index):
            self._emit(event)

    async def aclose(self) -> None:
        for turn in list(self._turns.values()):
            for call in turn.calls.values():
                if call.task is not None:
                    call.task.cancel()
        self._turns.clear()
