"""One assistant response on the wire: its items, content parts and terminal.

``ResponseState`` knows the protocol's lifecycle rules (an output item is
added before its content, a transcript ``done`` follows the audio ``done``,
exactly one ``response.done``) and returns the events to send; the service
decides when things happen. While the response streams them, it is the one
place its output items (messages, function calls, MCP calls and approval
requests) are written; the conversation holds the same items.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from speech_to_speech import ids
from speech_to_speech.pipeline.messages.generation import ResponseStatus, TokenUsage
from speech_to_speech.pipeline.messages.speech_output import AudioVisemes
from speech_to_speech.pipeline.messages.turn_taking import TurnDecision
from speech_to_speech.protocol import error_codes, error_types
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.conversation import conversation_item_added, conversation_item_done
from speech_to_speech.protocol.server_events.mcp import (
    response_mcp_call_arguments_delta,
    response_mcp_call_arguments_done,
    response_mcp_call_in_progress,
)
from speech_to_speech.protocol.server_events.response import (
    ResponseCreated,
    ResponseOutputAudioDelta,
    ResponseOutputAudioTranscriptDelta,
    ResponseOutputAudioVisemes,
    ResponseOutputTextDelta,
    response_content_part_added,
    response_content_part_done,
    response_created,
    response_done,
    response_function_call_arguments_delta,
    response_function_call_arguments_done,
    response_output_audio_delta,
    response_output_audio_done,
    response_output_audio_transcript_delta,
    response_output_audio_transcript_done,
    response_output_audio_visemes,
    response_output_item_added,
    response_output_item_done,
    response_output_text_delta,
    response_output_text_done,
)
from speech_to_speech.protocol.server_events.shapes import ContentRef


@dataclass
class OpenMessage:
    item: dict[str, Any]
    output_index: int
    transcript: str = ""
    audio_started: bool = False


@dataclass
class ResponseState:
    id: str
    generation: int
    conversation_id: str
    modalities: tuple[str, ...] = ("audio",)
    metadata: dict[str, Any] | None = None
    voice: str | None = None
    output_format: dict[str, Any] = field(default_factory=lambda: {"type": "audio/pcm", "rate": 24000})
    max_output_tokens: int | str = "inf"
    in_conversation: bool = True
    output: list[dict[str, Any]] = field(default_factory=list)
    message: OpenMessage | None = None
    usage_in: int = 0
    usage_out: int = 0
    usage_cached: int = 0  # of usage_in, what the model held in its cache from the turns before
    # Submitted to the LLM (False while waiting for committed input to be transcribed).
    submitted: bool = False
    input_call_ids: tuple[str, ...] = ()
    marks: dict[str, float] = field(default_factory=dict)
    # An automatic response answers one user turn; it may adopt that turn's speculation.
    turn_item_id: str | None = None
    # How the turn detector ended that turn (timings extension), when it did.
    turn_decision: TurnDecision | None = None
    # response.create's options (empty for an automatic response).
    options: dict[str, Any] = field(default_factory=dict)

    def owns(self, item: Any) -> bool:
        """Pipeline output of this response's request: its id, and the generation it was asked in."""
        return item.response_id == self.id and item.generation == self.generation

    @property
    def audio(self) -> bool:
        return "audio" in self.modalities

    # ------------------------------------------------------------ what happens to it

    def asked(self, generation: int, input_call_ids: tuple[str, ...] | None = None) -> None:
        """The model was asked for this response in ``generation``, the key of the cancellation rule (output of
        any other generation is not this response's). ``input_call_ids``: the tool results its own request
        carried; None when it was a speculation that asked ahead of the turn, which the response may adopt."""
        self.generation = generation
        if input_call_ids is not None:
            self.submitted = True
            self.input_call_ids = input_call_ids

    def mark(self, stage: str, at: float, *, first: bool = False) -> None:
        """When ``stage`` happened (monotonic; the timings extension); ``first``: keep the first time only."""
        if first:
            self.marks.setdefault(stage, at)
        else:
            self.marks[stage] = at

    def decided(self, decision: TurnDecision) -> None:
        """The turn detector ended the turn this response answers: how, and when it was asked and decided."""
        self.turn_decision = decision
        self.mark("turn_asked", decision.asked_at)
        self.mark("turn_decided", decision.decided_at)

    def count(self, usage: TokenUsage) -> None:
        """Tokens the model read and wrote for this response (its requests add up)."""
        self.usage_in += usage.input_tokens
        self.usage_out += usage.output_tokens
        self.usage_cached += usage.cached_tokens

    # ------------------------------------------------------------ response object

    def body(self, status: str, status_details: dict[str, Any] | None = None) -> dict[str, Any]:
        done = status != "in_progress"
        return {
            "object": "realtime.response",
            "id": self.id,
            "status": status,
            "status_details": status_details,
            "output": [dict(item) for item in self.output] if done else [],
            "conversation_id": self.conversation_id if self.in_conversation else None,
            "output_modalities": list(self.modalities),
            "max_output_tokens": self.max_output_tokens,
            "audio": {"output": {"format": self.output_format, "voice": self.voice}},
            "usage": self.usage() if done else None,
            "metadata": self.metadata,
        }

    def usage(self) -> dict[str, Any]:
        return {
            "total_tokens": self.usage_in + self.usage_out,
            "input_tokens": self.usage_in,
            "output_tokens": self.usage_out,
            "input_token_details": {"text_tokens": self.usage_in, "audio_tokens": 0,
                                    "cached_tokens": self.usage_cached},
            "output_token_details": {
                "text_tokens": self.usage_out,
                "audio_tokens": 0,
            },
        }

    def created(self) -> ResponseCreated:
        return response_created(self.body("in_progress"))

    # ------------------------------------------------------------ message items

    def _ref(self, message: OpenMessage) -> ContentRef:
        return {
            "response_id": self.id,
            "item_id": message.item["id"],
            "output_index": message.output_index,
            "content_index": 0,
        }

    def open_message(self, previous_item_id: str | None) -> tuple[OpenMessage, list[ServerEvent]]:
        """The open assistant message, opening one (with its events) if needed."""
        if self.message is not None:
            return self.message, []
        item: dict[str, Any] = {
            "id": ids.item_id(),
            "object": "realtime.item",
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        self.message = message = OpenMessage(item, len(self.output))
        self.output.append(item)
        part = {"type": "audio", "transcript": ""} if self.audio else {"type": "text", "text": ""}
        events: list[ServerEvent] = [response_output_item_added(self.id, message.output_index, item)]
        if self.in_conversation:
            events.append(conversation_item_added(item, previous_item_id))
        events.append(response_content_part_added(self._ref(message), part))
        item["content"] = [{"type": "output_audio", "transcript": ""} if self.audio
                           else {"type": "output_text", "text": ""}]
        return message, events

    def text_delta(self, message: OpenMessage,
                   text: str) -> ResponseOutputAudioTranscriptDelta | ResponseOutputTextDelta:
        message.transcript += text
        content = message.item["content"][0]
        if self.audio:
            content["transcript"] = message.transcript
            return response_output_audio_transcript_delta(self._ref(message), text)
        content["text"] = message.transcript
        return response_output_text_delta(self._ref(message), text)

    def audio_delta(self, message: OpenMessage, payload: str,
                    metadata: dict[str, Any] | None = None) -> ResponseOutputAudioDelta:
        """An audio chunk; ``metadata`` (additive): its item's audio so far and text marks (playback.py)."""
        message.audio_started = True
        return response_output_audio_delta(self._ref(message), payload, metadata)

    def visemes(self, message: OpenMessage, audio_start_ms: int, visemes: AudioVisemes) -> ResponseOutputAudioVisemes:
        """The visemes extension's event for the audio chunk about to go out (docs/visemes.md)."""
        return response_output_audio_visemes(
            self._ref(message), audio_start_ms, visemes.source,
            [{"viseme": v.viseme, "start_ms": v.start_ms, "duration_ms": v.duration_ms} for v in visemes.visemes])

    def close_message(self, status: str) -> list[ServerEvent]:
        """Close the open message: audio done, transcript done, part done, item done."""
        message, self.message = self.message, None
        if message is None:
            return []
        ref = self._ref(message)
        events: list[ServerEvent] = []
        if self.audio:
            events.append(response_output_audio_done(ref))
            events.append(response_output_audio_transcript_done(ref, message.transcript))
            part = {"type": "audio", "transcript": message.transcript}
        else:
            events.append(response_output_text_done(ref, message.transcript))
            part = {"type": "text", "text": message.transcript}
        message.item["status"] = status
        events.append(response_content_part_done(ref, part))
        events.extend(self.item_done(message.item, message.output_index))
        return events

    def item_done(self, item: dict[str, Any], output_index: int) -> list[ServerEvent]:
        events: list[ServerEvent] = [response_output_item_done(self.id, output_index, item)]
        if self.in_conversation:
            events.append(conversation_item_done(item))
        return events

    # ------------------------------------------------------------ tool calls

    def add_item(self, item: dict[str, Any], previous_item_id: str | None) -> tuple[int, list[ServerEvent]]:
        """Add ``item`` to the output (the open message closes first): its index, and the events that say so."""
        events = self.close_message("completed")
        output_index = len(self.output)
        self.output.append(item)
        events.append(response_output_item_added(self.id, output_index, item))
        if self.in_conversation:
            events.append(conversation_item_added(item, previous_item_id))
        return output_index, events

    def function_call(self, call_id: str, name: str, arguments: str,
                      previous_item_id: str | None) -> tuple[dict[str, Any], list[ServerEvent]]:
        item = {
            "id": ids.item_id(),
            "object": "realtime.item",
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": name,
            "arguments": "",
        }
        output_index, events = self.add_item(item, previous_item_id)
        events.append(response_function_call_arguments_delta(self.id, item["id"], output_index, call_id, arguments))
        events.append(response_function_call_arguments_done(self.id, item["id"], output_index, call_id, name,
                                                            arguments))
        item["arguments"] = arguments
        item["status"] = "completed"
        events.extend(self.item_done(item, output_index))
        return item, events

    def mcp_approval_request(self, server_label: str, name: str, arguments: str,
                             previous_item_id: str | None) -> tuple[dict[str, Any], list[ServerEvent]]:
        """A call of an MCP server's tool that waits for the user's approval: its item, added and done."""
        item = {"id": ids.item_id(), "type": "mcp_approval_request", "server_label": server_label, "name": name,
                "arguments": arguments}
        output_index, events = self.add_item(item, previous_item_id)
        events.extend(self.item_done(item, output_index))
        return item, events

    def mcp_call(self, server_label: str, name: str, arguments: str, approval_request_id: str | None,
                 previous_item_id: str | None) -> tuple[dict[str, Any], int, list[ServerEvent]]:
        """A call of an MCP server's tool that the server runs: its item, index, and events up to in_progress."""
        item: dict[str, Any] = {"id": ids.item_id(), "type": "mcp_call", "server_label": server_label, "name": name,
                                "arguments": "", "approval_request_id": approval_request_id, "output": None,
                                "error": None}
        output_index, events = self.add_item(item, previous_item_id)
        events.append(response_mcp_call_arguments_delta(self.id, item["id"], output_index, arguments))
        events.append(response_mcp_call_arguments_done(self.id, item["id"], output_index, arguments))
        item["arguments"] = arguments
        events.append(response_mcp_call_in_progress(item["id"], output_index))
        return item, output_index, events

    def call_returned(self, item_id: str, output: Any) -> None:
        """The server-run call ``item_id`` returned ``output`` (its item says so)."""
        self._output_item(item_id)["output"] = output

    def call_failed(self, item_id: str, error: dict[str, Any]) -> None:
        """The server-run call ``item_id`` failed (timed out, was cancelled) with ``error``."""
        self._output_item(item_id)["error"] = error

    def _output_item(self, item_id: str) -> dict[str, Any]:
        return next(item for item in self.output if item["id"] == item_id)

    # ------------------------------------------------------------ terminal

    def finish(self, status: ResponseStatus, reason: str | None = None,
               error: str | None = None) -> list[ServerEvent]:
        item_status = "completed" if status == "completed" else "incomplete"
        events = self.close_message(item_status)
        details: dict[str, Any] | None = None
        if status == "cancelled":
            details = {"type": "cancelled", "reason": reason}
        elif status == "incomplete":
            details = {"type": "incomplete", "reason": reason}
        elif status == "failed":
            details = {"type": "failed", "error": {"type": error_types.SERVER_ERROR,
                                                   "code": error_codes.RESPONSE_FAILED,
                                                   "message": error or "the response failed"}}
        events.append(response_done(self.body(status, details)))
        return events
