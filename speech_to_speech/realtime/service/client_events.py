"""What each client event asks of a session: its checks, and the session operation it maps to.

The handlers come in groups by what they act on, each given only the parts it
needs when the service is built: the session object and its lifecycle
(:class:`SessionClientEvents`), the input audio buffer (:class:`InputClientEvents`),
the conversation's items (:class:`ItemClientEvents`), and the responses and
their playback (:class:`ResponseClientEvents`). :class:`ClientEvents` parses an
event (:meth:`ClientEvents.prepare`) and hands it to the handler of its type
(:meth:`ClientEvents.apply`); no handler sees the service itself. A rejected
event raises :class:`RealtimeError`, which becomes an ``error`` event carrying
the client's ``event_id``; any other failure an internal ``server_error``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any, Protocol

from speech_to_speech.audio import codecs
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.protocol import error_codes, error_types
from speech_to_speech.protocol.metadata import followup_call_ids
from speech_to_speech.protocol.resume import STREAMED_CLIENT_EVENTS
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.conversation import (
    conversation_item_added,
    conversation_item_created,
    conversation_item_deleted,
    conversation_item_done,
    conversation_item_retrieved,
)
from speech_to_speech.protocol.server_events.session import error_event, session_updated
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.playback import Playback
from speech_to_speech.realtime.conversation.playback_ack import acknowledge
from speech_to_speech.realtime.conversation.responses import Responses
from speech_to_speech.realtime.conversation.user_input import UserInput
from speech_to_speech.realtime.service.session_events import SESSION_EVENTS, SessionControl
from speech_to_speech.realtime.service.session_updates import SessionUpdates
from speech_to_speech.realtime.tools.session_tools import SessionTools
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.events import ClientEvent, EventLimits, parse_client_event
from speech_to_speech.realtime.wire.items import client_item, response_options
from speech_to_speech.realtime.wire.session import SessionState

log = logging.getLogger(__name__)

Handler = Callable[[ClientEvent], None]

# Every client event type a session serves (the parser refuses any other before a session sees it).
CLIENT_EVENTS = frozenset({
    "session.update", *SESSION_EVENTS,
    "input_audio_buffer.append", "input_audio_buffer.commit", "input_audio_buffer.clear",
    "conversation.item.create", "conversation.item.retrieve", "conversation.item.truncate",
    "conversation.item.delete",
    "response.create", "response.cancel", "output_audio_buffer.clear", "playback.ack",
})


class HandlerGroup(Protocol):
    def handlers(self) -> Mapping[str, Handler]: ...


class SessionClientEvents:
    """``session.update``, and the session's lifecycle (heartbeat, event_ack, close, resume: session_events.py)."""

    def __init__(self, updates: SessionUpdates, emit: Callable[[ServerEvent], None], *,
                 session_control: SessionControl | None, tools: SessionTools | None = None) -> None:
        """``session_control``: the live session around it (None: not served); ``tools``: the MCP servers the
        server calls itself (listed once an update names them)."""
        self._updates = updates
        self._emit = emit
        self.session_control = session_control
        self._tools = tools

    def handlers(self) -> Mapping[str, Handler]:
        lifecycle = {kind: partial(handle, self) for kind, handle in SESSION_EVENTS.items()}
        return {"session.update": self.update, **lifecycle}

    def update(self, event: ClientEvent) -> None:
        self._emit(session_updated(self._updates.configure(event.data.get("session"), event.event_id)))
        if self._tools is not None:
            self._tools.session_changed()  # MCP servers it names are listed now, after the update is confirmed


class InputClientEvents:
    """The input audio buffer's events."""

    def __init__(self, user_input: UserInput, *, on_track: bool) -> None:
        """``on_track``: audio arrives on a media track (WebRTC), not in events."""
        self._input = user_input
        self._on_track = on_track

    def handlers(self) -> Mapping[str, Handler]:
        return {"input_audio_buffer.append": self.append, "input_audio_buffer.commit": self.commit,
                "input_audio_buffer.clear": self.clear}

    def decode(self, event: ClientEvent) -> FloatAudio:
        """An append's audio as 16 kHz float32 (run before the event is applied, maybe off the loop)."""
        if self._on_track:
            raise RealtimeError(
                error_codes.INVALID_EVENT_FOR_TRANSPORT,
                "input_audio_buffer.append is not used on this transport: audio arrives on the media track",
            )
        audio = event.data.get("audio")
        if not isinstance(audio, str):
            raise RealtimeError(error_codes.INVALID_REQUEST, "'audio' must be a base64 string", param="audio")
        try:
            return self._input.decode(audio)
        except codecs.AudioDecodeError as error:
            raise RealtimeError(error_codes.INVALID_REQUEST, str(error), param="audio") from None

    def append(self, event: ClientEvent) -> None:
        samples = event.audio if event.audio is not None else self.decode(event)
        refusal = self._input.refusal(len(samples))
        if refusal is not None:
            raise refusal
        self._input.push(samples)

    def commit(self, event: ClientEvent) -> None:
        self._input.commit()

    def clear(self, event: ClientEvent) -> None:
        self._input.clear()


class ItemClientEvents:
    """The conversation's items: created, retrieved, truncated (where playback stopped) and deleted."""

    def __init__(self, conversation: Conversation, playback: Playback, emit: Callable[[ServerEvent], None], *,
                 tools: SessionTools | None = None) -> None:
        """``tools``: the MCP servers the server calls itself (an approval response goes there)."""
        self._conversation = conversation
        self._playback = playback
        self._emit = emit
        self._tools = tools

    def handlers(self) -> Mapping[str, Handler]:
        return {"conversation.item.create": self.create, "conversation.item.retrieve": self.retrieve,
                "conversation.item.truncate": self.truncate, "conversation.item.delete": self.delete}

    def create(self, event: ClientEvent) -> None:
        conversation = self._conversation
        item = client_item(event.data.get("item"), event.event_id)
        previous = event.data.get("previous_item_id")
        if previous not in (None, "root") and previous not in conversation:
            raise RealtimeError(error_codes.ITEM_NOT_FOUND, f"previous_item_id {previous!r} does not exist",
                                type=error_types.INVALID_REQUEST_ERROR, param="previous_item_id")
        if item["id"] in conversation:
            raise RealtimeError(error_codes.INVALID_REQUEST, f"an item with id {item['id']!r} already exists",
                                param="item.id")
        if self._tools is not None:
            self._tools.calls.check_approval(item, event.event_id)
        before = conversation.add(item, None if previous in (None, "root") else previous)
        self._emit(conversation_item_created(item, before))
        self._emit(conversation_item_added(item, before))
        self._emit(conversation_item_done(item, before))
        if self._tools is not None and item["type"] == "mcp_approval_response":
            self._tools.approval_answered(item)

    def retrieve(self, event: ClientEvent) -> None:
        item_id = self._existing_item(event)
        self._emit(conversation_item_retrieved(self._conversation.snapshot(item_id)))

    def truncate(self, event: ClientEvent) -> None:
        if self._conversation.withdrawn(event.data.get("item_id")):
            return  # the server took that reply back (conversation.item.deleted crossed this event)
        item_id = self._existing_item(event)
        self._playback.truncate(item_id, event.data.get("content_index"), event.data.get("audio_end_ms"))

    def delete(self, event: ClientEvent) -> None:
        item_id = self._existing_item(event)
        self._conversation.delete(item_id)
        self._emit(conversation_item_deleted(item_id))

    def _existing_item(self, event: ClientEvent) -> str:
        item_id = event.data.get("item_id")
        if not isinstance(item_id, str) or item_id not in self._conversation:
            raise RealtimeError(error_codes.ITEM_NOT_FOUND, f"Item with item_id {item_id!r} not found",
                                param="item_id")
        return item_id


class ResponseClientEvents:
    """Responses asked for and cancelled, and what the client says of their playback."""

    def __init__(self, responses: Responses, state: SessionState, user_input: UserInput, playback: Playback,
                 emit: Callable[[ServerEvent], None]) -> None:
        self._responses = responses
        self._state = state
        self._input = user_input
        self._playback = playback  # its on_track: audio goes both ways on a media track (WebRTC), not in events
        self._emit = emit

    def handlers(self) -> Mapping[str, Handler]:
        return {"response.create": self.create, "response.cancel": self.cancel,
                "output_audio_buffer.clear": self.clear_output, "playback.ack": self.playback_ack}

    def create(self, event: ClientEvent) -> None:
        responses, state = self._responses, self._state
        if responses.active is not None:
            raise RealtimeError(
                error_codes.ACTIVE_RESPONSE,
                f"Conversation already has an active response in progress: {responses.active.id}. "
                "Wait until the response is finished before creating a new one.",
            )
        options = response_options(event.data.get("response"), event.event_id, state.limits, state.voices,
                                   state.local_mcp)
        followup = followup_call_ids(options.get("metadata"))
        if followup:
            if responses.answered_already(followup):
                raise RealtimeError(
                    error_codes.TOOL_FOLLOWUP_ALREADY_ANSWERED,
                    "A completed answer already included these tool results; no follow-up is needed.",
                )
            if self._input.turn_open:
                raise RealtimeError(
                    error_codes.TOOL_FOLLOWUP_USER_INPUT_PENDING,
                    "The user's turn is still open; send the follow-up after their item is committed.",
                )
        responses.start(options)

    def cancel(self, event: ClientEvent) -> None:
        wanted, response = event.data.get("response_id"), self._responses.active
        if response is None or (wanted and wanted != response.id):
            return  # nothing active: a no-op (a running speculation is not the client's to cancel)
        self._responses.cancel("client_cancelled")

    def clear_output(self, event: ClientEvent) -> None:
        if not self._playback.on_track:
            raise RealtimeError(error_codes.INVALID_EVENT_FOR_TRANSPORT,
                                "output_audio_buffer.clear is only used with WebRTC")
        if self._responses.active is not None:  # stop generating the audio too, as OpenAI's server does
            self._responses.cancel("client_cancelled", requested=True)
        else:
            self._responses.clear_playback(requested=True)

    def playback_ack(self, event: ClientEvent) -> None:
        response = self._responses.active
        active = response.id if response is not None else None
        self._emit(acknowledge(self._playback, event.data, active_response=active,
                               session_id=self._state.session.get("id")))


class ClientEvents:
    """One session's client events: parsed, then handed to the handler of their type (runs on the event loop,
    but :meth:`prepare`, which touches only the input decoder, may run off it)."""

    def __init__(self, groups: Iterable[HandlerGroup], *, decode_append: Callable[[ClientEvent], FloatAudio],
                 limits: EventLimits, emit: Callable[[ServerEvent], None]) -> None:
        self._handlers: dict[str, Handler] = {}
        for group in groups:
            self._handlers.update(group.handlers())
        assert self._handlers.keys() == CLIENT_EVENTS, "each client event type has exactly one handler"
        self._decode_append = decode_append
        self._limits = limits
        self._emit = emit

    def prepare(self, raw: str | bytes | dict[str, Any]) -> ClientEvent | RealtimeError:
        """Parse ``raw`` and decode the audio of an append: the CPU-heavy part of a client event.

        Touches only this session's input decoder, so the session runner may run it
        off the event loop (one event at a time) for a large frame.
        """
        try:
            event = parse_client_event(raw, CLIENT_EVENTS, self._limits)
        except RealtimeError as error:
            return error
        if event.type != "input_audio_buffer.append":
            return event
        try:
            return replace(event, audio=self._decode_append(event))
        except RealtimeError as error:
            error.event_id = error.event_id or event.event_id
            return error

    def apply(self, raw: str | bytes | dict[str, Any] | ClientEvent | RealtimeError) -> str | None:
        """Apply one client event (raw, or as :meth:`prepare` left it); a rejection becomes an error event.

        Returns the ``event_id`` of a taken event that a client would send again after a lost
        connection (applied or refused alike; not a stream's, see protocol.resume), else None.
        """
        event_id: str | None = None
        kind: str | None = None
        try:
            event = raw if isinstance(raw, ClientEvent | RealtimeError) else self.prepare(raw)
            if isinstance(event, RealtimeError):
                event_id = event.event_id
                raise event
            event_id, kind = event.event_id, event.type
            self._handlers[event.type](event)
        except RealtimeError as error:
            if error.event_id is None:
                error.event_id = event_id
            self._emit(error.to_event())
        except Exception as error:
            log.exception("client event failed")
            self._emit(error_event(error_codes.SERVER_ERROR, f"{type(error).__name__}: {error}",
                                   type=error_types.SERVER_ERROR, event_id=event_id))
        return None if kind in STREAMED_CLIENT_EVENTS else event_id
