"""The server's own sections: how it listens and who may connect (``server``), what one session may do (``limits``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Device = Literal["cpu", "cuda", "mps", "auto"]
# --num_pipelines: a number of units, or "auto" (pool_size.py sizes the pool for the machine).
PipelineCount = Annotated[int, Field(ge=1)] | Literal["auto"]

# Every section: unknown keys fail, assignments are validated, and a field is given by its flat name
# (its alias: ``stt_model``) or its name in the section (``model``).
SECTION_CONFIG = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)


class ServingSettings(BaseModel):
    """``server``: the process, its pool of units, access control, shutdown, the session store."""

    model_config = SECTION_CONFIG

    host: str = Field("127.0.0.1", description="Interface to listen on.")
    port: int = Field(8765, description="TCP port to listen on.")
    num_pipelines: PipelineCount = Field(
        "auto", description="Pipeline units = concurrent sessions; auto (the default): as many as this "
        "machine's CPUs and memory serve (GET /v1/pool says how many and why); or a number.",
    )
    log_level: str = Field("info", description="Logging level.")
    device: Device = Field("cpu", description="Device of the models that can use one (torch, CTranslate2).")
    release_timeout_s: float = Field(5.0, description="How long a released unit may take to drain.")
    shutdown_drain_s: float = Field(
        10.0, ge=0.0, le=300.0, description="On SIGTERM (an orchestrator's restart): how long sessions, closed "
        "with 1012 so their clients resume elsewhere, get to flush and connections to close before the process "
        "exits (keep the grace period of the orchestrator above it).",
    )
    demo: bool = Field(True, description="Serve the browser demo page at /demo.")

    # ------------------------------------------------------------ access control (see docs/security.md)
    api_key: str | None = Field(
        None, repr=False,
        description="Require 'Authorization: Bearer KEY' on every route but /health and /ready "
        "(env SPEECH_TO_SPEECH_API_KEY).",
    )
    allow_unauthenticated: bool = Field(False, description="Allow a non-loopback --host without --api_key.")
    allowed_origins: list[str] | None = Field(
        None, description="Browser Origins allowed besides the server's own (default: loopback, on a loopback bind)."
    )
    max_sessions_per_client: int = Field(8, ge=0, description="Concurrent sessions per client address (0: no limit).")
    max_sessions_per_minute: int = Field(
        600, ge=0, description="Sessions a client address may open per minute (0: no limit)."
    )
    admission_wait_s: float = Field(
        3.0, ge=0.0, le=60.0,
        description="How long a new session waits for a busy pipeline unit to come free before it is refused "
        "(HTTP 503, or an error event and close 1013 to a browser).",
    )

    # ------------------------------------------------------------ where resumable sessions live (docs/sessions.md)
    session_store: str = Field(
        "memory", pattern=r"^(memory|(redis|rediss|unix)://.+)$",
        description="Where resumable sessions are kept: memory (this process only) or redis://host:port/db "
        "(shared by replicas: a session resumes on any of them and outlives its server).",
    )


class LimitsSettings(BaseModel):
    """``limits``: what one session may send, keep and wait for (docs/security.md), and its resume journal."""

    model_config = SECTION_CONFIG

    max_event_bytes: int = Field(16 * 1024 * 1024, ge=1024, description="Largest client event (one frame) in bytes.")
    max_event_depth: int = Field(32, ge=4, description="Deepest nesting of JSON a client event may have.")
    max_uncommitted_audio_s: float = Field(
        300.0, gt=0.0, description="Input audio a session may buffer without a commit (turn detection off)."
    )
    max_queued_input_s: float = Field(
        300.0, gt=0.0, description="Input audio waiting for the VAD before appends are refused."
    )
    max_pending_output_bytes_per_session: int = Field(
        2 * 1024 * 1024, ge=1024, description="Output waiting for a slow client, in bytes of JSON, before it is closed."
    )
    max_pending_output_events_per_session: int = Field(
        512, ge=8, description="Output events waiting for a slow client before it is closed."
    )
    max_conversation_items: int = Field(1000, ge=10, description="Conversation items a session keeps (oldest go).")
    max_instructions_chars: int = Field(100_000, ge=100, description="Longest instructions a session may set.")
    max_tools: int = Field(128, ge=0, description="Most tools a session or response may declare.")
    idle_timeout_s: float = Field(
        300.0, ge=0.0, description="Close a session that sends nothing (no event, no audio) this long (0: never)."
    )
    response_stall_timeout_s: float = Field(
        60.0, ge=0.0, description="Fail a response whose pipeline produces nothing this long (a hung stage; 0: never)."
    )

    # ------------------------------------------------------------ resume and replay (see docs/sessions.md)
    disconnect_grace_s: float = Field(
        30.0, ge=0.0, description="How long a session whose socket dropped keeps running, resumable (0: not at all)."
    )
    replay_journal_max_bytes: int = Field(
        4 * 1024 * 1024, ge=0, description="Server events a session keeps for a resume, in bytes of JSON."
    )
    replay_journal_ttl_s: float = Field(
        120.0, ge=0.0, description="How long a session keeps a server event for a resume, in seconds."
    )
