"""protocol.server_events: every event the server can send has a TypedDict and one constructor, and what each
constructor builds is what OpenAI's schema (``openai.types.realtime``) accepts, or ours for an extension."""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import error_codes, error_types
from speech_to_speech.protocol.resume import LAST_CLIENT_EVENT_ID
from speech_to_speech.protocol.server_events import EVENT_TYPES, FAMILIES, ServerEvent, mcp, playback, response, session
from speech_to_speech.protocol.server_events import conversation as conv
from speech_to_speech.protocol.server_events import input_audio as audio_in
from speech_to_speech.protocol.server_events.shapes import ContentRef
from speech_to_speech.realtime.connection.frames import stamped
from speech_to_speech.realtime.conversation.response import ResponseState
from speech_to_speech.realtime.wire.session import SessionState
from speech_to_speech.testing.scripted import FAST_SCRIPTED
from speech_to_speech.testing.server_event_schema import (
    EXTENSION_EVENTS,
    EXTENSION_PREFIX,
    GA_MODELS,
    ProtocolViolation,
    check_typed_fields,
    validate_server_event,
)

ROOT = Path(__file__).resolve().parents[1]
# GA server events this server never sends, and why.
NOT_SENT = {
    "conversation.created": "a session's conversation is implicit, as in OpenAI's GA server",
    "conversation.item.input_audio_transcription.segment": "no diarized transcription",
    "input_audio_buffer.dtmf_event_received": "no telephony (SIP) transport",
    "input_audio_buffer.timeout_triggered": "no idle_timeout_ms in turn detection",
    "rate_limits.updated": "a local server has no rate limits to report",
}

SESSION = SessionState.for_server(ServerSettings(**FAST_SCRIPTED)).session
REF: ContentRef = {"response_id": "resp_1", "item_id": "item_2", "output_index": 0, "content_index": 0}
USER = {"id": "item_1", "object": "realtime.item", "type": "message", "role": "user", "status": "completed",
        "content": [{"type": "input_audio", "transcript": "what time is it"}]}
ASSISTANT = {"id": "item_2", "object": "realtime.item", "type": "message", "role": "assistant",
             "status": "completed", "content": [{"type": "output_audio", "transcript": "It is noon."}]}
CALL = {"id": "item_3", "object": "realtime.item", "type": "function_call", "status": "completed",
        "call_id": "call_1", "name": "clock", "arguments": "{}"}
MCP_CALL = {"id": "item_4", "type": "mcp_call", "server_label": "time", "name": "now", "arguments": "{}",
            "approval_request_id": None, "output": "12:00", "error": None}
MCP_LIST = {"id": "item_5", "type": "mcp_list_tools", "server_label": "time", "tools": []}
FIGURES: playback.PlaybackFigures = {"generated_ms": 900, "sent_ms": 900, "played_ms": 400, "committed_ms": 400}
RETRY_HINT = "error:error.retry_after_s"  # our extension of the error object (a refused session)
OVERLAP: playback.OverlapMetadata = {"overlap_ms": 300, "item_id": "item_6", "response_id": "resp_1",
                                     "short_ack_ms": 700, "barge_in_ms": 1200}


def _response_body(status: str) -> dict[str, Any]:
    """A response object as the server builds it (conversation/response.py), with one message."""
    state = ResponseState("resp_1", 1, "conv_1", metadata={"topic": "time"})
    state.output.append(ASSISTANT)
    return state.body(status)


# Each constructor, called as the server calls it: every optional field given once and left out once.
SAMPLES: dict[Callable[..., Any], list[Callable[[], Any]]] = {
    session.session_created: [lambda: session.session_created(SESSION),
                              lambda: session.session_created(SESSION, {"session_id": "sess_1",
                                                                        "attachment_generation": 1,
                                                                        "resume_token": "rt_1"})],
    session.session_updated: [lambda: session.session_updated(SESSION)],
    session.error_event: [lambda: session.error_event(error_codes.INVALID_VALUE, "bad", param="item_id",
                                                      event_id="evt_client_1"),
                          lambda: session.error_event(error_codes.SESSION_LIMIT_REACHED, "busy",
                                                      retry_after_s=1)],
    session.session_resumed: [lambda: session.session_resumed("sess_1", SESSION, 2, "rt_2", "evt_client_3"),
                              lambda: session.session_resumed("sess_1", SESSION, 2, "rt_2", None)],
    session.session_replaced: [lambda: session.session_replaced("sess_1", 1)],
    session.session_heartbeat_ack: [lambda: session.session_heartbeat_ack("sess_1")],
    session.session_closed: [lambda: session.session_closed("sess_1", error_codes.CLIENT_CLOSE),
                             lambda: session.session_closed("sess_1", error_codes.OUTPUT_LIMIT_EXCEEDED,
                                                            {"max_pending_output_bytes": 1024})],
    session.session_expired: [lambda: session.session_expired("sess_1", "disconnect_grace_expired")],
    session.session_resync_required: [lambda: session.session_resync_required("sess_1", "journal_gap")],
    audio_in.input_audio_buffer_speech_started: [lambda: audio_in.input_audio_buffer_speech_started(120, "item_1")],
    audio_in.input_audio_buffer_speech_stopped: [lambda: audio_in.input_audio_buffer_speech_stopped(980, "item_1")],
    audio_in.input_audio_buffer_committed: [lambda: audio_in.input_audio_buffer_committed(None, "item_1"),
                                            lambda: audio_in.input_audio_buffer_committed("item_0", "item_1")],
    audio_in.input_audio_buffer_cleared: [audio_in.input_audio_buffer_cleared],
    audio_in.input_audio_transcription_delta: [lambda: audio_in.input_audio_transcription_delta("item_1", "what")],
    audio_in.input_audio_transcription_completed: [
        lambda: audio_in.input_audio_transcription_completed("item_1", "what time is it", 0.8614)],
    audio_in.input_audio_transcription_failed: [lambda: audio_in.input_audio_transcription_failed(
        "item_1", {"type": error_types.SERVER_ERROR, "code": "stt_failed", "message": "stt failed", "param": None})],
    audio_in.input_audio_transcription_snapshot: [
        lambda: audio_in.input_audio_transcription_snapshot("item_1", "what time")],
    conv.conversation_item_created: [lambda: conv.conversation_item_created(USER, None)],
    conv.conversation_item_added: [lambda: conv.conversation_item_added(USER, "item_0"),
                                   lambda: conv.conversation_item_added(MCP_LIST, None)],
    conv.conversation_item_done: [lambda: conv.conversation_item_done(ASSISTANT),
                                  lambda: conv.conversation_item_done(USER, None),
                                  lambda: conv.conversation_item_done(MCP_CALL)],
    conv.conversation_item_retrieved: [lambda: conv.conversation_item_retrieved(ASSISTANT)],
    conv.conversation_item_deleted: [lambda: conv.conversation_item_deleted("item_2")],
    conv.conversation_item_truncated: [lambda: conv.conversation_item_truncated("item_2", 400)],
    response.response_created: [lambda: response.response_created(_response_body("in_progress"))],
    response.response_done: [lambda: response.response_done(_response_body("completed"))],
    response.response_output_item_added: [lambda: response.response_output_item_added("resp_1", 0, ASSISTANT),
                                          lambda: response.response_output_item_added("resp_1", 1, MCP_CALL)],
    response.response_output_item_done: [lambda: response.response_output_item_done("resp_1", 1, CALL)],
    response.response_content_part_added: [
        lambda: response.response_content_part_added(REF, {"type": "audio", "transcript": ""})],
    response.response_content_part_done: [
        lambda: response.response_content_part_done(REF, {"type": "text", "text": "It is noon."})],
    response.response_output_text_delta: [lambda: response.response_output_text_delta(REF, "It is")],
    response.response_output_text_done: [lambda: response.response_output_text_done(REF, "It is noon.")],
    response.response_output_audio_delta: [
        lambda: response.response_output_audio_delta(REF, "AAAA"),
        lambda: response.response_output_audio_delta(REF, "AAAA", {"audio_duration_ms": 40})],
    response.response_output_audio_done: [lambda: response.response_output_audio_done(REF)],
    response.response_output_audio_transcript_delta: [
        lambda: response.response_output_audio_transcript_delta(REF, "It is")],
    response.response_output_audio_transcript_done: [
        lambda: response.response_output_audio_transcript_done(REF, "It is noon.")],
    response.response_function_call_arguments_delta: [
        lambda: response.response_function_call_arguments_delta("resp_1", "item_3", 1, "call_1", "{}")],
    response.response_function_call_arguments_done: [
        lambda: response.response_function_call_arguments_done("resp_1", "item_3", 1, "call_1", "clock", "{}")],
    response.response_output_audio_visemes: [lambda: response.response_output_audio_visemes(
        REF, 40, "phonemes", [{"viseme": "aa", "start_ms": 0, "duration_ms": 20}])],
    mcp.mcp_list_tools_in_progress: [lambda: mcp.mcp_list_tools_in_progress("item_5")],
    mcp.mcp_list_tools_completed: [lambda: mcp.mcp_list_tools_completed("item_5")],
    mcp.mcp_list_tools_failed: [lambda: mcp.mcp_list_tools_failed("item_5")],
    mcp.response_mcp_call_arguments_delta: [lambda: mcp.response_mcp_call_arguments_delta("resp_1", "item_4", 1, "{}")],
    mcp.response_mcp_call_arguments_done: [lambda: mcp.response_mcp_call_arguments_done("resp_1", "item_4", 1, "{}")],
    mcp.response_mcp_call_in_progress: [lambda: mcp.response_mcp_call_in_progress("item_4", 1)],
    mcp.response_mcp_call_completed: [lambda: mcp.response_mcp_call_completed("item_4", 1)],
    mcp.response_mcp_call_failed: [lambda: mcp.response_mcp_call_failed("item_4", 1)],
    playback.output_audio_buffer_started: [lambda: playback.output_audio_buffer_started("resp_1")],
    playback.output_audio_buffer_stopped: [lambda: playback.output_audio_buffer_stopped("resp_1")],
    playback.output_audio_buffer_cleared: [lambda: playback.output_audio_buffer_cleared("resp_1")],
    playback.playback_acknowledged: [lambda: playback.playback_acknowledged(
        "sess_1", "resp_1", "item_2", played_ms=400, committed_ms=400, truncate=False, playback=FIGURES,
        history_committed=False)],
    playback.overlap_decision: [
        lambda: playback.overlap_decision("sess_1", "listen_only", "acknowledge", "short_backchannel", OVERLAP),
        lambda: playback.overlap_decision("sess_1", "adaptive", "barge_in", "interruption",
                                          {**OVERLAP, "transcript": "wait, stop"})],
}


def constructors() -> dict[Callable[..., Any], type]:
    """Every public function the families define, with the TypedDict it says it returns."""
    found = {}
    for family in FAMILIES:
        for _, function in inspect.getmembers(family, inspect.isfunction):
            if function.__module__ == family.__name__ and not function.__name__.startswith("_"):
                found[function] = get_type_hints(function)["return"]
    return found


def test_every_ga_event_type_is_typed_or_named_as_not_sent() -> None:
    assert set(GA_MODELS) - set(EVENT_TYPES) == set(NOT_SENT)


def test_every_typed_event_is_openais_or_a_documented_extension() -> None:
    unknown = [kind for kind in EVENT_TYPES
               if kind not in GA_MODELS and not kind.startswith(EXTENSION_PREFIX) and kind not in EXTENSION_EVENTS]
    assert unknown == []


def test_each_event_type_has_exactly_one_constructor() -> None:
    returns = list(constructors().values())
    assert sorted(t.__name__ for t in returns) == sorted(t.__name__ for t in EVENT_TYPES.values())


def test_every_constructor_has_samples_here() -> None:
    assert set(SAMPLES) == set(constructors())


@pytest.mark.parametrize(("build", "typed"), [(build, typed) for constructor, typed in constructors().items()
                                               for build in SAMPLES.get(constructor, [])],
                         ids=lambda value: getattr(value, "__name__", None))
def test_each_constructor_builds_its_type_and_a_strict_client_accepts_it(build: Callable[[], Any],
                                                                         typed: type) -> None:
    event = build()
    assert EVENT_TYPES[event["type"]] is typed
    sent = json.loads(json.dumps(stamped(event, 7)))  # as a client reads it: with its event_id and seq
    validate_server_event(sent, [RETRY_HINT])  # the GA model strictly (no field it lacks) where one exists
    if event["type"] in GA_MODELS:
        assert GA_MODELS[event["type"]].model_validate(sent).type == event["type"]


def test_an_event_outside_its_type_is_refused() -> None:
    check_typed_fields({"type": "session.expired", "session_id": "sess_1", "reason": "gone", "event_id": "e"})
    with pytest.raises(ProtocolViolation, match="not in the type"):
        check_typed_fields({"type": "session.expired", "session_id": "sess_1", "reason": "gone", "epoch": 3})
    with pytest.raises(ProtocolViolation, match="missing"):
        check_typed_fields({"type": "session.expired", "session_id": "sess_1"})
    with pytest.raises(ProtocolViolation, match="no TypedDict"):
        check_typed_fields({"type": "session.exploded"})


def test_item_events_carry_the_item_as_it_was() -> None:
    item = dict(USER, content=[])
    added = conv.conversation_item_added(item, None)
    item["status"] = "incomplete"
    assert added["item"]["status"] == "completed"


def test_session_resumed_names_the_resume_field_of_the_protocol() -> None:
    assert LAST_CLIENT_EVENT_ID in session.SessionResumed.__required_keys__


def _event_literals(path: Path) -> list[str]:
    """Where ``path`` writes a server event as a dict, ``{"type": "<server event type>", …}``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if (isinstance(key, ast.Constant) and key.value == "type" and isinstance(value, ast.Constant)
                    and (value.value in EVENT_TYPES or value.value in GA_MODELS)):
                found.append(f"{path.name}:{node.lineno} {value.value}")
    return found


def test_the_server_builds_no_event_outside_its_constructor() -> None:
    server = [path for package in ("realtime", "pipeline", "units")
              for path in (ROOT / "speech_to_speech" / package).rglob("*.py")]
    assert [hit for path in server for hit in _event_literals(path)] == []


def test_the_literal_scan_finds_an_event_written_by_hand(tmp_path: Path) -> None:
    module = tmp_path / "by_hand.py"
    module.write_text('EVENT = {"type": "conversation.item.added", "item": {"type": "message"}}\n')
    assert _event_literals(module) == ["by_hand.py:1 conversation.item.added"]


def test_server_event_is_the_union_of_the_typed_events() -> None:
    assert len(EVENT_TYPES) == len(ServerEvent.__args__)  # no type named twice
