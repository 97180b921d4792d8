"""The life of a session's response: opened, submitted to the LLM, and finished exactly once.

:class:`Responses` owns the active response (at most one per session): it
opens it (``response.created``), asks the LLM what conversation/requests.py
builds (also what a speculation or a prefill asks) once every committed user
turn has its transcript, or adopts the speculation that already asked it, and
finishes it (``response.done``, with its metadata, its audio's tail and the
playback figures) when it completes, is cancelled or fails. Which pipeline output belongs to it is
:meth:`Responses.current`. The output of an adopted speculation, held off the
wire until then, waits in :meth:`Responses.adopted_output` for the caller
(the service's dispatch) to translate once the call that adopted it returns:
nothing here calls back up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from speech_to_speech import ids
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.generation import (
    AssistantToolCallPart,
    PromptPrefill,
    ResponseDone,
    ResponseStatus,
)
from speech_to_speech.pipeline.messages.transcription import SpeculativeTranscript
from speech_to_speech.protocol import TIMINGS_EXTENSION, error_codes, error_types
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.conversation import conversation_item_deleted
from speech_to_speech.protocol.server_events.session import error_event
from speech_to_speech.realtime.conversation.history import Conversation, item_text
from speech_to_speech.realtime.conversation.playback import Playback
from speech_to_speech.realtime.conversation.requests import RequestTools, ResponseRequests
from speech_to_speech.realtime.conversation.response import OpenMessage, ResponseState
from speech_to_speech.realtime.conversation.response_metadata import finished_metadata
from speech_to_speech.realtime.conversation.speculation import Speculation, SpeculationSlot
from speech_to_speech.realtime.conversation.user_input import UserInput
from speech_to_speech.realtime.wire.mcp_tools import McpServerSpec
from speech_to_speech.realtime.wire.session import SessionState
from speech_to_speech.realtime.wire.tool_results import ToolResultLedger
from speech_to_speech.units.unit import PipelineUnit


class ServerTools(RequestTools, Protocol):
    """What a response asks of the tools the server runs itself (realtime/tools/). They are built on the
    responses they act on and plug themselves in (:meth:`Responses.attach_tools`): nothing here names them."""

    def ready(self, specs: tuple[McpServerSpec, ...]) -> bool: ...

    def holds_submit(self, response: ResponseState) -> bool: ...

    def submitted(self, response: ResponseState) -> None: ...

    def tool_call(self, response: ResponseState, part: AssistantToolCallPart) -> bool: ...

    def request_done(self, response: ResponseState, done: ResponseDone) -> bool: ...

    def finishing(self, response: ResponseState, status: str, reason: str | None) -> None: ...

    def finished(self) -> None: ...


class ResponseListener(Protocol):
    """Told what became of the session's responses beside the events the client gets (the server's metrics)."""

    def response_finished(self, status: str, marks: Mapping[str, float]) -> None: ...

    def reply_taken_back(self) -> None: ...


class Responses:
    """One session's active response and the rules for opening, submitting and finishing it."""

    def __init__(self, unit: PipelineUnit, settings: ServerSettings, state: SessionState,
                 *, conversation: Conversation, user_input: UserInput,
                 speculations: SpeculationSlot, playback: Playback,
                 emit: Callable[[ServerEvent], None]) -> None:
        self._unit = unit
        self._settings = settings
        self._state = state
        self._conversation = conversation
        self._input = user_input
        self._speculations = speculations
        self._playback = playback
        # Tool call ids that completed answers took in (the duplicate follow-up extension).
        self._tool_results = ToolResultLedger()
        self._emit = emit
        self._listeners: list[ResponseListener] = []
        self.conversation_id = ids.new_id("conv")
        self.active: ResponseState | None = None
        self.last: ResponseState | None = None  # the last to finish, unless it failed
        self._tools: ServerTools | None = None  # MCP servers and preambles (realtime/tools/), once attached
        self._requests = ResponseRequests(state, conversation=conversation, playback=playback)
        self._adopted: list[Any] = []  # held output of an adopted speculation, now the response's, not yet taken

    def attach_tools(self, tools: ServerTools) -> None:
        """The tools the server runs itself take part in responses from now on (they attach themselves)."""
        self._tools = tools
        self._requests.attach_tools(tools)

    def listen(self, listener: ResponseListener) -> None:
        """``listener`` is told from now on how each response ends and each reply taken back."""
        self._listeners.append(listener)

    def continue_conversation(self, conversation_id: str) -> None:
        """Responses go on in the conversation ``conversation_id`` (a session taken over from another replica)."""
        self.conversation_id = conversation_id

    def heard(self, language: str | None) -> None:
        """The STT heard the user's words in ``language`` (None: it did not say): the reply's, unless the
        session chose one."""
        self._requests.heard(language)

    @property
    def reply_language(self) -> str | None:
        """The language replies are in: the session's, else the one the user was last heard in."""
        return self._requests.reply_language()

    def answered_already(self, call_ids: list[str]) -> bool:
        """A completed answer already took in every one of these tool results (a follow-up is a duplicate)."""
        return self._tool_results.all_answered(call_ids)

    def mcp_specs(self, options: dict[str, Any]) -> tuple[McpServerSpec, ...]:
        """The MCP servers a response may call: its own ``tools``' when ``response.create`` gave some."""
        return self._requests.mcp_specs(options)

    def reconfigured(self) -> None:
        """The session's config changed: a speculation that no automatic response will take over stops."""
        td = self._state.config.turn_detection
        if self.active is None and (td is None or not td.create_response):
            self._speculations.drop()

    def start(self, options: dict[str, Any], turn_item_id: str | None = None) -> None:
        """Open a response (response.created); it is submitted once its input is transcribed."""
        self.open(options, turn_item_id)

    def speak_if_idle(self) -> None:
        """Open a response of the server's own (a tool's late result, a declined call) if none is active and
        the user is not in the middle of a turn; else the next answer has it in its history."""
        if self.active is None and not self._input.turn_open:
            self.start({})

    def answer(self, turn_item_id: str) -> None:
        """Open the automatic response to the user turn ``turn_item_id``, unless the turn has left the
        conversation meanwhile (the client deleted it)."""
        if turn_item_id in self._conversation:
            self.start({}, turn_item_id=turn_item_id)

    @property
    def playing_for_s(self) -> float:
        """How long the user's speaker will go on playing assistant audio (conversation/playback.py)."""
        return self._playback.playing_for_s

    def open(self, options: dict[str, Any], turn_item_id: str | None = None, *,
             submit: bool = True) -> ResponseState:
        """Open a response and return it (``submit``: False when something else asks the model, later).

        An automatic response to a user turn takes over that turn's running speculation
        (its id and generation); any other speculation is of no use to it and stops.
        """
        config = self._state.config
        speculation = self._speculations.current
        if speculation is None or turn_item_id is None or speculation.item_id != turn_item_id:
            self._speculations.drop()
            speculation = None
        response = ResponseState(
            id=speculation.response_id if speculation else ids.response_id(),
            generation=speculation.generation if speculation else self._unit.cancel_scope.generation,
            conversation_id=self.conversation_id,
            modalities=tuple(options.get("output_modalities") or config.output_modalities),
            metadata=options.get("metadata"),
            voice=options.get("voice") or config.voice,
            output_format=self._state.output_format,
            max_output_tokens=options.get("max_output_tokens") or self._state.session.get("max_output_tokens", "inf"),
            in_conversation=options.get("conversation", "auto") != "none",
            turn_item_id=turn_item_id,
            options=options,
        )
        response.mark("created", time.monotonic())
        self.active = response
        self._emit(response.created())
        if submit:
            self.submit_when_ready()
        return response

    def submit_when_ready(self) -> None:
        """Send the request once every committed user turn has its transcript.

        A speculation made for this response is adopted when it asked exactly
        what the response would ask now; otherwise it stops, and the request
        goes out in a new generation, so nothing of the speculation (output or
        terminal) can reach the response.
        """
        response = self.active
        if response is None or response.submitted or self._input.pending_transcriptions:
            return
        if self._tools is not None and (self._tools.holds_submit(response)
                                       or not self._tools.ready(self._requests.mcp_specs(response.options))):
            return  # its MCP servers are still being listed, or it runs an approved call first
        speculation = self._speculations.take(response.id)
        turn = self._conversation.get(response.turn_item_id) if response.turn_item_id else None
        if turn is not None and not item_text(turn).strip():
            self._speculations.cancel(speculation)
            self.finish("completed")  # nothing was heard: nothing to answer
            return
        request = self._requests.request(response.id, response.generation, response.options,
                                         self._requests.history())
        if speculation is not None and speculation.answers(request):
            self._adopt(response, speculation)
            return
        self._speculations.cancel(speculation)
        request = replace(request, generation=self._unit.cancel_scope.generation)
        response.asked(request.generation, request.input_call_ids)
        self._unit.submit(request)
        self._watch(response)

    def speculate(self, transcript: SpeculativeTranscript, waiting: ResponseState | None) -> None:
        """Ask the model now what the turn would ask if it ended on ``transcript``'s words (held off the wire
        until it does: conversation/speculation.py). ``waiting``: the response already open for that turn,
        which the speculation asks for; else it asks for the response the turn would open."""
        self._speculations.drop()
        self.heard(transcript.language)
        history = self._requests.history(heard=(transcript.item_id, transcript.transcript))
        request = self._requests.request(waiting.id if waiting is not None else ids.response_id(),
                               self._unit.cancel_scope.generation, {}, history)
        self._speculations.start(Speculation(transcript.item_id, transcript.speculation, request))
        if waiting is not None:
            waiting.asked(request.generation)
        self._unit.submit(request)

    def read_ahead(self) -> None:
        """Let the LLM read the prompt the next reply will begin with (the instructions, the tools, the
        conversation so far) while nobody waits for it, where it has tools. A session's first reply otherwise
        reads them after the user's turn: ~600 tokens for bench tools' four, ~5 s on 2 cores."""
        if not self._settings.turns.prefill_during_speech:
            return  # reading ahead is off (--prefill_during_speech false)
        if self.active is not None or self._speculations.current is not None:
            return
        if self._tools is not None and not self._tools.ready(self._requests.mcp_specs({})):
            return  # its MCP servers are still being listed: read once they are
        request = self._requests.request("prefill", self._unit.cancel_scope.generation, {}, self._requests.history())
        if request.tools:  # without, the prompt is short, and reading it would only evict a longer one
            self._unit.submit(PromptPrefill(request))

    def read_ahead_heard(self, item_id: str | None, words: str) -> None:
        """Let the LLM read the request the turn ``item_id`` would make on the ``words`` heard so far, while the
        user goes on: at the pause only the last words are left to read (--prefill_during_speech)."""
        if not self._settings.turns.prefill_during_speech:
            return
        history = self._requests.history(heard=(item_id, words))
        request = self._requests.request("prefill", self._unit.cancel_scope.generation, {}, history)
        self._unit.submit(PromptPrefill(request))

    def follow_up(self, response: ResponseState) -> None:
        """Ask the model again for ``response`` (after its tool calls): the same id and generation, so its
        output joins the response; the history now holds the calls' results."""
        if response is not self.active:
            return
        request = self._requests.request(response.id, response.generation, response.options,
                                         self._requests.history(), first=False)
        response.asked(response.generation, tuple(dict.fromkeys(response.input_call_ids + request.input_call_ids)))
        self._unit.submit(request)
        self._watch(response)

    def _watch(self, response: ResponseState) -> None:
        """The model now works on ``response``: its wait for a first word is watched (the preamble timer)."""
        if self._tools is not None:
            self._tools.submitted(response)

    def _adopt(self, response: ResponseState, speculation: Speculation) -> None:
        """The turn asked what the speculation asked: its (held) output is this response's."""
        response.asked(speculation.generation, speculation.request.input_call_ids)
        self._watch(response)  # a speculation still reading its prompt leaves the user waiting all the same
        self._adopted.extend(speculation.held)

    def adopted_output(self) -> list[Any]:
        """The held output of a speculation adopted since the last call (oldest first), taken: the response's
        now, to be translated as if it had just arrived."""
        adopted, self._adopted = self._adopted, []
        return adopted

    def finish(self, status: ResponseStatus, reason: str | None = None, error: str | None = None, *,
               report: bool = True) -> None:
        """End the active response (if any) with ``status``: its last events, and out of the history if cut."""
        response = self.active
        if response is None:
            return
        if self._tools is not None:
            self._tools.finishing(response, status, reason)  # its running calls' last events, inside it
        self.active = None
        self.last = response if status != "failed" else None
        self._speculations.cancel(self._speculations.take(response.id))
        if status == "failed" and report:
            self._emit(error_event(error_codes.RESPONSE_FAILED, error or "the response failed",
                                   type=error_types.SERVER_ERROR))
        answered = status == "completed" and bool(response.input_call_ids) and bool(response.output)
        if answered:
            self._tool_results.answered(response.input_call_ids)
        response.metadata = finished_metadata(response, timings=self._state.config.has_extension(TIMINGS_EXTENSION),
                                              answered_tool_results=answered,
                                              playback=self._playback.settle(response.id, status),
                                              heard_language=self._requests.heard_language)
        self._end_output_audio(response, status)
        for event in response.finish(status, reason, error):
            self._emit(event)
        self._playback.response_ended(response.id)
        for listener in self._listeners:
            listener.response_finished(status, response.marks)
        if status in ("incomplete", "failed"):
            self._conversation.exclude([item["id"] for item in response.output])
        if self._tools is not None:
            self._tools.finished()

    def open_message(self, response: ResponseState) -> OpenMessage:
        """``response``'s message, opened (its events sent, and in the conversation) if it was not yet."""
        message, events = response.open_message(self._conversation.last_id)
        if events and response.in_conversation:
            self._conversation.add(message.item)
        for event in events:
            self._emit(event)
        return message

    def tool_call(self, response: ResponseState, part: AssistantToolCallPart) -> None:
        """The model called a tool: the server runs it if one of the response's MCP servers has it; else it is
        the client's function, an item of ``response`` (and of the conversation)."""
        if self._tools is not None and self._tools.tool_call(response, part):
            return
        call, events = response.function_call(part.call_id, part.name, part.arguments, self._conversation.last_id)
        if response.in_conversation:
            self._conversation.add(call)
        for event in events:
            self._emit(event)

    def request_done(self, response: ResponseState, done: ResponseDone) -> None:
        """The model's request of the active ``response`` ended: it finishes as the request did, unless the
        server's tool calls in it decide what comes next (ask again, or wait for them)."""
        if self._tools is None or not self._tools.request_done(response, done):
            self.finish(done.status, done.reason, done.error)

    def _end_output_audio(self, response: ResponseState, status: str) -> None:
        """The resampler's held-back tail ends this response (dropped if cancelled), never the next."""
        tail = self._playback.end_output(keep_tail=status != "cancelled" and response.message is not None)
        if tail is not None and response.message is not None:
            self._emit(response.audio_delta(response.message, tail,
                                            self._playback.delta_metadata(response.id, response.message.item["id"])))

    def cancel(self, reason: str, *, requested: bool = False) -> None:
        """Steps 3 and 7 of the interruption rules: close, cancel, flush."""
        self.finish("cancelled", reason)
        self._unit.cancel_scope.cancel()
        self.clear_playback(requested=requested)

    def take_back(self, response: ResponseState) -> None:
        """Withdraw ``response`` (active or the last): cancelled as speech over it would cancel it, and its
        items deleted, so the model never said it (conversation/take_back.py)."""
        if response is self.active:
            self.cancel("turn_detected")
        if response is self.last:
            self.last = None
        for item in response.output:
            if self._conversation.withdraw(item["id"]):
                self._emit(conversation_item_deleted(item["id"]))
        for listener in self._listeners:
            listener.reply_taken_back()

    def clear_playback(self, *, requested: bool = False) -> None:
        """Drop unplayed audio from the media track (if any); its items are cut at what was played."""
        self._playback.clear(requested=requested)

    def fail(self, code: str, message: str, response: ResponseState | None) -> None:
        """Report a server-side failure and end ``response`` (if still active) with it; the session goes on."""
        self._emit(error_event(code, message, type=error_types.SERVER_ERROR))
        if response is None or response is not self.active:
            return
        self.finish("failed", error=message, report=False)
        if response.submitted:
            self._unit.cancel_scope.cancel()  # the rest of its output would have nowhere to go

    def current(self, item: Any) -> ResponseState | None:
        """The active response if ``item`` is output of its request and not stale."""
        response = self.active
        if response is None or not response.owns(item) or self._unit.cancel_scope.is_stale(item.generation):
            return None
        return response
