"""The Realtime session object's schema: the models a merged ``session`` must validate against, and the
RuntimeConfig the pipeline reads, derived from a validated one (wire/session.py keeps the object and merges
updates into it)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

from speech_to_speech.pipeline.messages.generation import Truncation
from speech_to_speech.pipeline.session_config import RuntimeConfig, TurnDetection
from speech_to_speech.protocol.policies import (
    ADAPTIVE,
    COMMIT_ALL_ON_DONE,
    LISTEN_ONLY,
    OverlapPolicy,
    PlaybackCommitPolicy,
)
from speech_to_speech.realtime.wire.content_limits import VOICE_MAX_CHARS, VOICE_PATTERN
from speech_to_speech.realtime.wire.mcp_tools import McpTool

MAX_THRESHOLD_MS = 60000


class _Open(BaseModel):
    # Stock clients send fields we do not use (prompt, include, tracing, …): accept them.
    model_config = ConfigDict(extra="allow")


class AudioFormat(_Open):
    type: Literal["audio/pcm", "audio/pcmu", "audio/pcma"] = "audio/pcm"
    rate: int | None = Field(default=None, ge=8000, le=48000)


class TurnDetectionModel(_Open):
    type: Literal["server_vad", "semantic_vad"] = "server_vad"
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    prefix_padding_ms: int | None = Field(default=None, ge=0, le=10000)
    silence_duration_ms: int | None = Field(default=None, ge=0, le=10000)
    create_response: bool | None = None
    interrupt_response: bool | None = None
    eagerness: Literal["low", "medium", "high", "auto"] | None = None
    idle_timeout_ms: int | None = None


class Transcription(_Open):
    model: str | None = None
    language: str | None = None
    prompt: str | None = None


class NoiseReduction(_Open):
    """OpenAI's GA ``audio.input.noise_reduction``: the microphone is close (headset) or far (laptop, room)."""

    type: Literal["near_field", "far_field"]


class AudioInput(_Open):
    format: AudioFormat | None = None
    turn_detection: TurnDetectionModel | None = None
    transcription: Transcription | None = None
    noise_reduction: NoiseReduction | None = None


class AudioOutputModel(_Open):
    format: AudioFormat | None = None
    voice: str | None = Field(default=None, min_length=1, max_length=VOICE_MAX_CHARS, pattern=VOICE_PATTERN)
    speed: float | None = Field(default=None, ge=0.25, le=4.0)


class Audio(_Open):
    input: AudioInput | None = None
    output: AudioOutputModel | None = None


class FunctionTool(_Open):
    type: Literal["function"] = "function"
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None


def _tool_kind(value: Any) -> str:
    # A tool without a type is a function tool, as before MCP tools were served.
    kind = value.get("type", "function") if isinstance(value, dict) else getattr(value, "type", "function")
    return str(kind)


Tool = Annotated[Annotated[FunctionTool, Tag("function")] | Annotated[McpTool, Tag("mcp")], Discriminator(_tool_kind)]
# How long the user may wait in silence for a reply before a short preamble is said (docs/sessions.md,
# "No dead air"): past the usual first audio of a local reply (about half a second to a second), short of
# the two seconds or so after which silence on a voice line reads as a dropped call.
DEFAULT_PREAMBLE_AFTER_MS = 1000
# listen_only's thresholds (ms of voiced speech over the answer): shorter is a remark, longer a barge-in.
DEFAULT_OVERLAP_SHORT_ACK_MS = 700
DEFAULT_OVERLAP_BARGE_IN_MS = 1200


class TokenLimits(_Open):
    post_instructions: int | None = Field(default=None, ge=0, strict=True)


class RetentionRatio(_Open):
    """``truncation`` as a block cut: past the context, drop the oldest turns down to this share of it."""

    type: Literal["retention_ratio"]
    retention_ratio: float = Field(ge=0.0, le=1.0)
    token_limits: TokenLimits | None = None


# What "auto" keeps when it cuts: a fifth of the context goes at once, so a cut comes rarely.
AUTO_RETENTION_RATIO = 0.8


class Reasoning(_Open):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None


class SessionModel(_Open):
    type: Literal["realtime"] = "realtime"
    instructions: str | None = None
    output_modalities: list[Literal["audio", "text"]] | None = None
    audio: Audio | None = None
    tools: list[Tool] | None = None
    tool_choice: str | dict[str, Any] | None = None
    max_output_tokens: int | Literal["inf"] | None = None
    reasoning: Reasoning | None = None
    truncation: Literal["auto", "disabled"] | RetentionRatio | None = "auto"  # None: "auto"
    overlap_policy: OverlapPolicy = ADAPTIVE
    overlap_short_ack_ms: int = Field(default=DEFAULT_OVERLAP_SHORT_ACK_MS, ge=0, le=MAX_THRESHOLD_MS, strict=True)
    overlap_barge_in_ms: int = Field(default=DEFAULT_OVERLAP_BARGE_IN_MS, ge=0, le=MAX_THRESHOLD_MS, strict=True)
    extensions: list[str] | None = None
    # How much of an answer enters the LLM's history (docs/sessions.md, "Playback truth").
    playback_commit_policy: PlaybackCommitPolicy = COMMIT_ALL_ON_DONE
    # Our extension: silence (ms) before a preamble, and three times it (1 s at least) before each holding
    # phrase after it (realtime/tools/holding.py); None: never say one.
    preamble_after_ms: int | None = Field(default=DEFAULT_PREAMBLE_AFTER_MS, ge=0, le=MAX_THRESHOLD_MS,
                                          strict=True)

    @field_validator("output_modalities")
    @classmethod
    def _one_modality(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) > 1:
            raise ValueError("output_modalities must be ['audio'] or ['text']")
        return value

    @field_validator("tool_choice")
    @classmethod
    def _tool_choice(cls, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        if isinstance(value, str) and value not in ("auto", "none", "required"):
            raise ValueError("tool_choice must be auto, none, required or a function")
        if isinstance(value, dict) and (value.get("type") != "function" or not value.get("name")):
            raise ValueError("a tool_choice object must be {'type': 'function', 'name': ...}")
        return value

    @field_validator("max_output_tokens")
    @classmethod
    def _max_tokens(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and not 1 <= value <= 4096:
            raise ValueError("max_output_tokens must be between 1 and 4096 or 'inf'")
        return value


def truncation(value: Literal["auto", "disabled"] | RetentionRatio | None) -> Truncation:
    """The session's ``truncation`` as the LLM stage applies it (llm/context_window.py)."""
    if value == "disabled":
        return Truncation(retention_ratio=None)
    if isinstance(value, RetentionRatio):
        limits = value.token_limits
        return Truncation(value.retention_ratio, limits.post_instructions if limits else None)
    return Truncation(AUTO_RETENTION_RATIO)


def runtime_config(session: SessionModel) -> RuntimeConfig:
    audio = session.audio or Audio()
    audio_in = audio.input or AudioInput()
    audio_out = audio.output or AudioOutputModel()
    td = audio_in.turn_detection
    turn_detection = None
    if td is not None:
        turn_detection = TurnDetection(
            type=td.type,
            threshold=td.threshold,
            silence_duration_ms=td.silence_duration_ms,
            prefix_padding_ms=td.prefix_padding_ms,
            interrupt_response=td.interrupt_response if td.interrupt_response is not None else True,
            create_response=td.create_response if td.create_response is not None else True,
            eagerness=td.eagerness,
        )
    transcription = audio_in.transcription
    max_tokens = session.max_output_tokens
    return RuntimeConfig(
        truncation=truncation(session.truncation),
        instructions=session.instructions,
        voice=audio_out.voice,
        language=transcription.language if transcription else None,
        tools=tuple(t.model_dump(exclude_none=True) for t in session.tools or [] if isinstance(t, FunctionTool)),
        tool_choice=session.tool_choice or "auto",
        turn_detection=turn_detection,
        reasoning_effort=session.reasoning.effort if session.reasoning else None,
        max_output_tokens=max_tokens if isinstance(max_tokens, int) else None,
        output_modalities=tuple(session.output_modalities or ("audio",)),
        noise_reduction=audio_in.noise_reduction.type if audio_in.noise_reduction else None,
        extensions=tuple(session.extensions or ()),
        overlap_barge_in_ms=session.overlap_barge_in_ms if session.overlap_policy in (ADAPTIVE, LISTEN_ONLY)
        else None,
    )
