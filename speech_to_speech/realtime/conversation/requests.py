"""What the LLM is asked for a response: the conversation as it reads it, the tools, the instructions.

:class:`ResponseRequests` builds a :class:`GenerateResponseRequest` from the
session's config, a ``response.create``'s options and the history (the
conversation as the user heard it: playback truth), with the function tools of
the response's MCP servers and the preamble the server's tools ask for. The
same request is what a speculation and a prefill ask, so a turn can adopt the
speculation that asked it (conversation/responses.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.playback import Playback
from speech_to_speech.realtime.wire.mcp_tools import McpServerSpec
from speech_to_speech.realtime.wire.session import SessionState
from speech_to_speech.speech_text.languages import base_language


class RequestTools(Protocol):
    """What a request takes from the tools the server runs itself (realtime/tools/)."""

    def function_tools(self, specs: tuple[McpServerSpec, ...], taken: set[str]) -> list[dict[str, Any]]: ...

    def preamble(self, turns: int) -> str | None: ...


class ResponseRequests:
    """The requests one session's responses make of the LLM (runs on the event loop)."""

    def __init__(self, state: SessionState, *, conversation: Conversation,
                 playback: Playback) -> None:
        self._state = state
        self._conversation = conversation
        self._playback = playback
        self._tools: RequestTools | None = None
        # The language the STT heard the user's last words in: the reply's, unless the session chose one.
        self.heard_language: str | None = None

    def attach_tools(self, tools: RequestTools) -> None:
        self._tools = tools

    def heard(self, language: str | None) -> None:
        """The STT heard the user's words in ``language`` (None: it did not say)."""
        self.heard_language = language or self.heard_language

    def reply_language(self) -> str | None:
        """The language the reply is in: the session's, else the one the user was heard in (None: unknown)."""
        language = self._state.config.language
        return language if base_language(language) else self.heard_language

    def history(self, heard: tuple[str | None, str] | None = None) -> tuple[ChatMessage, ...]:
        """The LLM's view of the conversation (``heard``: a user turn whose transcript is not in yet)."""
        return self._conversation.history(heard=heard, said=self._playback.history_text)

    def mcp_specs(self, options: dict[str, Any]) -> tuple[McpServerSpec, ...]:
        """The MCP servers a response may call: its own ``tools``' when ``response.create`` gave some."""
        return tuple(options["mcp"]) if "mcp" in options else self._state.mcp_servers

    def request(self, response_id: str, generation: int, options: dict[str, Any],
                history: tuple[ChatMessage, ...], *, first: bool = True) -> GenerateResponseRequest:
        """The request for the model; ``first``: the response's first (a follow-up says no preamble)."""
        config = self._state.config
        max_tokens = options.get("max_output_tokens", config.max_output_tokens)
        tools = tuple(options.get("tools", config.tools))
        preamble = None
        if self._tools is not None:
            taken = {str(tool.get("name")) for tool in tools}
            tools += tuple(self._tools.function_tools(self.mcp_specs(options), taken))
            # The same for a speculation and the turn's own request, which may then adopt it.
            preamble = self._tools.preamble(len(history)) if first else None
        return GenerateResponseRequest(
            response_id=response_id,
            generation=generation,
            messages=history,
            instructions=options.get("instructions") or config.instructions,
            tools=tools,
            tool_choice=options.get("tool_choice", config.tool_choice),
            reasoning_effort=options.get("reasoning_effort", config.reasoning_effort),
            max_output_tokens=max_tokens if isinstance(max_tokens, int) else None,
            voice=options.get("voice") or config.voice,
            language=self.reply_language(),
            input_call_ids=self._conversation.input_call_ids(history),
            output_modalities=tuple(options.get("output_modalities") or config.output_modalities),
            metadata=options.get("metadata"),
            truncation=config.truncation,
            preamble=preamble,
        )
