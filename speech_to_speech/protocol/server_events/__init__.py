"""Every event the server sends, typed: one ``TypedDict`` and one constructor per event type.

The families are modules: ``session`` (the session, errors and our lifecycle
extensions), ``input_audio`` (speech, commits, transcription), ``conversation``
(items), ``response`` (a response and its content), ``mcp`` (MCP servers the
server calls) and ``playback`` (play-out, ``playback.acknowledged``,
``overlap.decision``). The server builds each event only with its
constructor, so its fields are named and typed in one place; at run time an
event is the plain dict it always was, and nothing checks it on the way out
(the wire tests check it against OpenAI's schema, or ours for extensions).

An event as built has no ``event_id`` or ``server_event_seq``: those are
stamped on it as it leaves (realtime/connection/frames.py).
"""

from typing import get_args, get_type_hints

from speech_to_speech.protocol.server_events import conversation, input_audio, mcp, playback, response, session

ServerEvent = (
    session.SessionCreated
    | session.SessionUpdated
    | session.ErrorEvent
    | session.SessionResumed
    | session.SessionReplaced
    | session.SessionHeartbeatAck
    | session.SessionClosed
    | session.SessionExpired
    | session.SessionResyncRequired
    | input_audio.InputAudioBufferSpeechStarted
    | input_audio.InputAudioBufferSpeechStopped
    | input_audio.InputAudioBufferCommitted
    | input_audio.InputAudioBufferCleared
    | input_audio.InputAudioTranscriptionDelta
    | input_audio.InputAudioTranscriptionCompleted
    | input_audio.InputAudioTranscriptionFailed
    | input_audio.InputAudioTranscriptionSnapshot
    | conversation.ConversationItemCreated
    | conversation.ConversationItemAdded
    | conversation.ConversationItemDone
    | conversation.ConversationItemRetrieved
    | conversation.ConversationItemDeleted
    | conversation.ConversationItemTruncated
    | response.ResponseCreated
    | response.ResponseDone
    | response.ResponseOutputItemAdded
    | response.ResponseOutputItemDone
    | response.ResponseContentPartAdded
    | response.ResponseContentPartDone
    | response.ResponseOutputTextDelta
    | response.ResponseOutputTextDone
    | response.ResponseOutputAudioDelta
    | response.ResponseOutputAudioDone
    | response.ResponseOutputAudioTranscriptDelta
    | response.ResponseOutputAudioTranscriptDone
    | response.ResponseFunctionCallArgumentsDelta
    | response.ResponseFunctionCallArgumentsDone
    | response.ResponseOutputAudioVisemes
    | mcp.McpListToolsInProgress
    | mcp.McpListToolsCompleted
    | mcp.McpListToolsFailed
    | mcp.ResponseMcpCallArgumentsDelta
    | mcp.ResponseMcpCallArgumentsDone
    | mcp.ResponseMcpCallInProgress
    | mcp.ResponseMcpCallCompleted
    | mcp.ResponseMcpCallFailed
    | playback.OutputAudioBufferStarted
    | playback.OutputAudioBufferStopped
    | playback.OutputAudioBufferCleared
    | playback.PlaybackAcknowledged
    | playback.OverlapDecision
)

FAMILIES = (session, input_audio, conversation, response, mcp, playback)


def _by_type() -> dict[str, type]:
    found: dict[str, type] = {}
    for event in get_args(ServerEvent):
        (name,) = get_args(get_type_hints(event)["type"])
        found[name] = event
    return found


# The TypedDict of each event type the server sends, by its ``type``.
EVENT_TYPES: dict[str, type] = _by_type()
