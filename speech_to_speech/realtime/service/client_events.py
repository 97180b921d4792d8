"""What each client event asks of a session: its checks, and the session operation it maps to.

One function per client event type, in :data:`CLIENT_EVENTS`;
``RealtimeService.handle_client_event`` parses an event (:func:`prepare_event`)
and calls the one for its type (:func:`apply_event`). They act on the
session's parts (the input buffer, the responses, the conversation, the
playback ledger...), which the service gives them as an :class:`EventTarget`
when it is built; they never see the service itself. A rejected event raises
:class:`RealtimeError`, which becomes an ``error`` event carrying the
client's ``event_id``; any other failure an internal ``server_error``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

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


@dataclass(frozen=True)
class EventTarget:
    """What client events act on: the parts of one session, given by the service that owns them."""

    state: SessionState
    conversation: Conversation
    user_input: UserInput
    responses: Responses
    updates: SessionUpdates
    playback: Playback  # its on_track: audio goes both ways on a media track (WebRTC), not in events
    event_limits: EventLimits
    session_control: SessionControl | None  # the live session around it (heartbeat, event_ack, close)
    emit: Callable[[ServerEvent], None]
    tools: SessionTools | None = None  # the MCP servers the server calls itself (approvals go there)


def session_update(target: EventTarget, event: ClientEvent) -> None:
    target.updates.configure(event.data.get("session"), event.event_id)
    target.emit(session_updated(target.state.session))
    if target.tools is not None:
        target.tools.session_changed()  # MCP servers it names are listed now, after the update is confirmed


def decode_append(target: EventTarget, event: ClientEvent) -> FloatAudio:
    """An append's audio as 16 kHz float32 (run before the event is applied, maybe off the loop)."""
    if target.playback.on_track:
        raise RealtimeError(
            error_codes.INVALID_EVENT_FOR_TRANSPORT,
            "input_audio_buffer.append is not used on this transport: audio arrives on the media track",
        )
    audio = event.data.get("audio")
    if not isinstance(audio, str):
        raise RealtimeError(error_codes.INVALID_REQUEST, "'audio' must be a base64 string", param="audio")
    try:
        return target.user_input.decode(audio)
    except codecs.AudioDecodeError as error:
        raise RealtimeError(error_codes.INVALID_REQUEST, str(error), param="audio") from None


def input_audio_buffer_append(target: EventTarget, event: ClientEvent) -> None:
    samples = event.audio if event.audio is not None else decode_append(target, event)
    refusal = target.user_input.refusal(len(samples))
    if refusal is not None:
        raise refusal
    target.user_input.push(samples)


def input_audio_buffer_commit(target: EventTarget, event: ClientEvent) -> None:
    target.user_input.commit()


def input_audio_buffer_clear(target: EventTarget, event: ClientEvent) -> None:
    target.user_input.clear()


def conversation_item_create(target: EventTarget, event: ClientEvent) -> None:
    conversation = target.conversation
    item = client_item(event.data.get("item"), event.event_id)
    previous = event.data.get("previous_item_id")
    if previous not in (None, "root") and previous not in conversation:
        raise RealtimeError(error_codes.ITEM_NOT_FOUND, f"previous_item_id {previous!r} does not exist",
                            type=error_types.INVALID_REQUEST_ERROR, param="previous_item_id")
    if item["id"] in conversation:
        raise RealtimeError(error_codes.INVALID_REQUEST, f"an item with id {item['id']!r} already exists",
                            param="item.id")
    if target.tools is not None:
        target.tools.calls.check_approval(item, event.event_id)
    before = conversation.add(item, None if previous in (None, "root") else previous)
    target.emit(conversation_item_created(item, before))
    target.emit(conversation_item_added(item, before))
    target.emit(conversation_item_done(item, before))
    if target.tools is not None and item["type"] == "mcp_approval_response":
        target.tools.approval_answered(item)


def conversation_item_retrieve(target: EventTarget, event: ClientEvent) -> None:
    item_id = _existing_item(target, event)
    target.emit(conversation_item_retrieved(target.conversation.snapshot(item_id)))


def conversation_item_truncate(target: EventTarget, event: ClientEvent) -> None:
    if target.conversation.withdrawn(event.data.get("item_id")):
        return  # the server took that reply back (conversation.item.deleted crossed this event)
    item_id = _existing_item(target, event)
    target.playback.truncate(item_id, event.data.get("content_index"), event.data.get("audio_end_ms"))


def conversation_item_delete(target: EventTarget, event: ClientEvent) -> None:
    item_id = _existing_item(target, event)
    target.conversation.delete(item_id)
    target.emit(conversation_item_deleted(item_id))


def playback_ack(target: EventTarget, event: ClientEvent) -> None:
    response = target.responses.active
    active = response.id if response is not None else None
    acknowledged = acknowledge(target.playback, event.data, active_response=active,
                               session_id=target.state.session.get("id"))
    target.emit(acknowledged)


def _existing_item(target: EventTarget, event: ClientEvent) -> str:
    item_id = event.data.get("item_id")
    if not isinstance(item_id, str) or item_id not in target.conversation:
        raise RealtimeError(error_codes.ITEM_NOT_FOUND, f"Item with item_id {item_id!r} not found", param="item_id")
    return item_id


def response_create(target: EventTarget, event: ClientEvent) -> None:
    if target.responses.active is not None:
        raise RealtimeError(
            error_codes.ACTIVE_RESPONSE,
            f"Conversation already has an active response in progress: {target.responses.active.id}. "
            "Wait until the response is finished before creating a new one.",
        )
    options = response_options(event.data.get("response"), event.event_id, target.state.limits,
                               target.state.voices, target.state.local_mcp)
    followup = followup_call_ids(options.get("metadata"))
    if followup:
        if target.responses.answered_already(followup):
            raise RealtimeError(
                error_codes.TOOL_FOLLOWUP_ALREADY_ANSWERED,
                "A completed answer already included these tool results; no follow-up is needed.",
            )
        if target.user_input.turn_open:
            raise RealtimeError(
                error_codes.TOOL_FOLLOWUP_USER_INPUT_PENDING,
                "The user's turn is still open; send the follow-up after their item is committed.",
            )
    target.responses.start(options)


def response_cancel(target: EventTarget, event: ClientEvent) -> None:
    wanted, response = event.data.get("response_id"), target.responses.active
    if response is None or (wanted and wanted != response.id):
        return  # nothing active: a no-op (a running speculation is not the client's to cancel)
    target.responses.cancel("client_cancelled")


def output_audio_buffer_clear(target: EventTarget, event: ClientEvent) -> None:
    if not target.playback.on_track:
        raise RealtimeError(error_codes.INVALID_EVENT_FOR_TRANSPORT,
                            "output_audio_buffer.clear is only used with WebRTC")
    if target.responses.active is not None:  # stop generating the audio too, as OpenAI's server does
        target.responses.cancel("client_cancelled", requested=True)
    else:
        target.responses.clear_playback(requested=True)


CLIENT_EVENTS: dict[str, Callable[[EventTarget, ClientEvent], None]] = {
    "session.update": session_update,
    "input_audio_buffer.append": input_audio_buffer_append,
    "input_audio_buffer.commit": input_audio_buffer_commit,
    "input_audio_buffer.clear": input_audio_buffer_clear,
    "conversation.item.create": conversation_item_create,
    "conversation.item.retrieve": conversation_item_retrieve,
    "conversation.item.truncate": conversation_item_truncate,
    "conversation.item.delete": conversation_item_delete,
    "response.create": response_create,
    "response.cancel": response_cancel,
    "output_audio_buffer.clear": output_audio_buffer_clear,
    "playback.ack": playback_ack,
}
CLIENT_EVENTS.update(SESSION_EVENTS)  # heartbeat, event_ack, close, resume: the session's lifecycle


def prepare_event(target: EventTarget, raw: str | bytes | dict[str, Any]) -> ClientEvent | RealtimeError:
    """Parse ``raw`` and decode the audio of an append: the CPU-heavy part of a client event.

    Touches only this session's input decoder, so the session runner may run it
    off the event loop (one event at a time) for a large frame.
    """
    try:
        event = parse_client_event(raw, CLIENT_EVENTS, target.event_limits)
    except RealtimeError as error:
        return error
    if event.type != "input_audio_buffer.append":
        return event
    try:
        return replace(event, audio=decode_append(target, event))
    except RealtimeError as error:
        error.event_id = error.event_id or event.event_id
        return error


def apply_event(target: EventTarget, raw: str | bytes | dict[str, Any] | ClientEvent | RealtimeError) -> str | None:
    """Apply one client event (raw, or as :func:`prepare_event` left it); a rejection becomes an error event.

    Returns the ``event_id`` of a taken event that a client would send again after a lost
    connection (applied or refused alike; not a stream's, see protocol.resume), else None.
    """
    event_id: str | None = None
    kind: str | None = None
    try:
        event = raw if isinstance(raw, ClientEvent | RealtimeError) else prepare_event(target, raw)
        if isinstance(event, RealtimeError):
            event_id = event.event_id
            raise event
        event_id, kind = event.event_id, event.type
        CLIENT_EVENTS[event.type](target, event)
    except RealtimeError as error:
        if error.event_id is None:
            error.event_id = event_id
        target.emit(error.to_event())
    except Exception as error:
        log.exception("client event failed")
        target.emit(error_event(error_codes.SERVER_ERROR, f"{type(error).__name__}: {error}",
                                type=error_types.SERVER_ERROR, event_id=event_id))
    return None if kind in STREAMED_CLIENT_EVENTS else event_id
