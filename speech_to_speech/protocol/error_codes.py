"""The ``code`` of each ``error`` event (and failed ``response.done``) the server sends, named once.

The server raises them; the client and the benches read them. Where OpenAI
defines a code we use theirs; the rest are ours (docs/security.md, docs/sessions.md).
"""

# Refused at the door, or an event the server cannot parse.
INVALID_API_KEY = "invalid_api_key"
ORIGIN_NOT_ALLOWED = "origin_not_allowed"
SESSION_LIMIT_REACHED = "session_limit_reached"
UNKNOWN_OR_INVALID_EVENT = "unknown_or_invalid_event"
# Limits of one session (docs/security.md).
EVENT_TOO_LARGE = "event_too_large"
INPUT_AUDIO_BUFFER_FULL = "input_audio_buffer_full"
INPUT_QUEUE_FULL = "input_audio_queue_full"
OUTPUT_LIMIT_EXCEEDED = "output_limit_exceeded"
SESSION_IDLE_TIMEOUT = "session_idle_timeout"
SERVER_SHUTTING_DOWN = "server_shutting_down"
TOO_MANY_SESSIONS = "too_many_sessions"
INVALID_SESSION_TYPE = "invalid_session_type"
ACTIVE_RESPONSE = "conversation_already_has_active_response"
ITEM_NOT_FOUND = "conversation_item_not_found"
RESPONSE_NOT_FOUND = "response_not_found"  # a playback.ack of a response this session does not know
INVALID_REQUEST = "invalid_request_error"
INVALID_VALUE = "invalid_value"
COMMIT_EMPTY = "input_audio_buffer_commit_empty"
INVALID_EVENT_FOR_TRANSPORT = "invalid_event_for_transport"
TOOL_FOLLOWUP_ALREADY_ANSWERED = "tool_followup_already_answered"
TOOL_FOLLOWUP_USER_INPUT_PENDING = "tool_followup_user_input_pending"
# MCP servers named in a session (docs/sessions.md, "MCP tools"): a listing that failed leaves its tools out;
# an approval answer must name a request the server made.
MCP_LIST_TOOLS_FAILED = "mcp_list_tools_failed"
MCP_APPROVAL_REQUEST_NOT_FOUND = "mcp_approval_request_not_found"
SERVER_ERROR = "server_error"
RESPONSE_FAILED = "response_failed"  # the LLM or TTS failed mid-answer: the response ends as failed
RESPONSE_STALLED = "response_stalled"  # the pipeline produced nothing for --response_stall_timeout_s
# session.closed's reason when the client asked for it (a close the server decides gives its error code).
CLIENT_CLOSE = "client_close"
# POST /v1/realtime/calls (WebRTC), answered over HTTP.
INVALID_SDP = "invalid_sdp"
WEBRTC_UNAVAILABLE = "webrtc_unavailable"
CALL_NOT_FOUND = "call_not_found"
# Resuming a session over a new socket (docs/sessions.md, "Resume and replay").
SESSION_RESUME_EXPIRED = "session_resume_expired"
SESSION_RESUME_INVALID_TOKEN = "session_resume_invalid_token"
SESSION_RESUME_REQUIRED = "session_resume_required"
# Sessions shared by replicas (--session_store redis): a response cut by the loss of its server, by the
# session moving to another replica, or a resume the store could not serve now.
SERVER_LOST = "server_lost"
SESSION_MOVED = "session_moved"
SESSION_STORE_UNAVAILABLE = "session_store_unavailable"


def stage_failed(stage: str) -> str:
    """The code of a pipeline stage's failure: ``stt_failed``, ``tts_failed``, ``vad_failed``, …"""
    return f"{stage}_failed"
