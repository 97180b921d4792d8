"""The tools a session's server runs itself, put together for the responses (``Responses.attach_tools``).

:class:`SessionTools` joins the session's MCP servers (listing, cached),
their calls inside responses, the preamble timer and the holding phrases
after it, and answers what a response asks of them (conversation/responses.py
``ServerTools``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, ResponseDone
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.playback import Playback
from speech_to_speech.realtime.conversation.response import ResponseState
from speech_to_speech.realtime.conversation.responses import Responses
from speech_to_speech.realtime.tools.holding import HoldingTimer
from speech_to_speech.realtime.tools.mcp_calls import McpCalls
from speech_to_speech.realtime.tools.mcp_servers import McpServers
from speech_to_speech.realtime.tools.preamble import PreambleTimer, phrase
from speech_to_speech.realtime.wire.mcp_tools import McpServerSpec
from speech_to_speech.realtime.wire.session import SessionState
from speech_to_speech.units.unit import PipelineUnit


class SessionTools:
    """One session's server-run tools (runs on the event loop)."""

    def __init__(self, unit: PipelineUnit, settings: ServerSettings, state: SessionState, *,
                 conversation: Conversation, playback: Playback,
                 responses: Responses, emit: Callable[[ServerEvent], None],
                 on_listed: Callable[[], None] = lambda: None) -> None:
        """``on_listed``: told after a listing let a waiting response go on (what it adopted is translated);
        ``playback``: where the user's speaker is (the quiet the holding phrases wait for)."""
        self._state = state
        self._conversation = conversation
        self._responses = responses
        self._on_listed = on_listed
        self.servers = McpServers(conversation, emit, list_timeout_s=settings.tools.mcp_list_timeout_s,
                                  on_listed=self._listed)
        self.calls = McpCalls(self.servers, responses, conversation, emit,
                              call_timeout_s=settings.tools.mcp_call_timeout_s)
        self._unit = unit
        self.holding = HoldingTimer(unit, lambda: responses.active, self._preamble_after_ms, self._language,
                                    lambda: playback.speaker_quiet_at)
        self.timer = PreambleTimer(unit, lambda: responses.active, self._preamble_after_ms, self._language,
                                   on_said=lambda response: self.holding.watch(response, asked=True))
        responses.attach_tools(self)  # what a response asks of the server's tools, it asks of these

    def _preamble_after_ms(self) -> int | None:
        value = self._state.session.get("preamble_after_ms")
        return value if isinstance(value, int) else None

    def _language(self) -> str | None:
        """The phrases' language: the reply's (the session's, else the one the user was heard in, where the
        voice speaks it)."""
        return self._unit.reply_language(self._responses.reply_language)

    def session_changed(self) -> None:
        """The session's tools may name new servers: list them now, before a response needs them; the
        prompt they make is read ahead (now, or once they are listed)."""
        self.servers.use(self._state.mcp_servers)
        self._responses.read_ahead()

    def _listed(self) -> None:
        self._responses.submit_when_ready()  # a response waiting for these tools goes on
        self._responses.read_ahead()  # or, with none, the prompt they make is read ahead
        self._on_listed()

    # ------------------------------------------------------------ ServerTools

    def ready(self, specs: tuple[McpServerSpec, ...]) -> bool:
        self.servers.use(specs)
        return self.servers.ready(specs)

    def function_tools(self, specs: tuple[McpServerSpec, ...], taken: set[str]) -> list[dict[str, Any]]:
        return self.servers.function_tools(specs, taken)

    def holds_submit(self, response: ResponseState) -> bool:
        return self.calls.holds_submit(response)

    def preamble(self, turns: int) -> str | None:
        if self._preamble_after_ms() is None:
            return None
        return phrase(self._language(), turns)

    def submitted(self, response: ResponseState) -> None:
        if self._answers_the_client_s_call(response):
            self.holding.watch(response, goes_on=True)  # the wait the call's preamble began goes on
            return
        self.timer.arm(response)  # nothing said yet: the wait for a first word
        self.holding.watch(response)  # something said (a follow-up on a call's result): the wait after it

    def _answers_the_client_s_call(self, response: ResponseState) -> bool:
        """``response`` answers the output of a function call the client ran, with nobody speaking since the
        call's response, which said something: to the user, one wait across the two responses."""
        last = self._conversation.get(self._conversation.last_id or "") or {}
        before = self._responses.last
        return (last.get("type") == "function_call_output" and "speech_end" not in response.marks
                and before is not None and "first_audio_sent" in before.marks)

    def tool_call(self, response: ResponseState, part: AssistantToolCallPart) -> bool:
        ours = self.calls.tool_call(response, part)
        if ours:
            self.holding.watch(response)  # the call runs inside the response: the user waits for it
        return ours

    def request_done(self, response: ResponseState, done: ResponseDone) -> bool:
        return self.calls.request_done(response, done)

    def finishing(self, response: ResponseState, status: str, reason: str | None) -> None:
        self.timer.cancel()
        self.holding.stop()
        self.calls.finishing(response, status, reason)

    def finished(self) -> None:
        self.calls.finished()
        self._arm_held()

    def approval_answered(self, item: dict[str, Any]) -> None:
        """An ``mcp_approval_response`` joined the conversation (checked by ``calls.check_approval``)."""
        self.calls.approval_answered(item)
        self._arm_held()

    def _arm_held(self) -> None:
        # A response that runs an approved call before asking the model is waited on all the same.
        active = self._responses.active
        if active is not None and self.calls.holds_submit(active):
            self.timer.arm(active)

    async def aclose(self) -> None:
        self.timer.cancel()
        self.holding.stop()
        await self.calls.aclose()
        await self.servers.aclose()
