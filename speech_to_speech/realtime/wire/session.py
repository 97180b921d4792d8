"""The Realtime session object: defaults, ``session.update`` deep merge, validation.

The wire shape (what ``session.created``/``session.updated`` echo) is kept as
a plain dict; each update is merged into a copy, validated with the models
below, and only then swapped in, together with the RuntimeConfig the
pipeline reads. A rejected update changes nothing.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator

from speech_to_speech import ids
from speech_to_speech.audio.rates import WIRE_RATE
from speech_to_speech.pipeline.messages import Truncation
from speech_to_speech.pipeline.session_config import RuntimeConfig, TurnDetection
from speech_to_speech.protocol.error_codes import INVALID_REQUEST, INVALID_SESSION_TYPE
from speech_to_speech.protocol.policies import (
    ADAPTIVE,
    COMMIT_ALL_ON_DONE,
    LISTEN_ONLY,
    OverlapPolicy,
    PlaybackCommitPolicy,
)
from speech_to_speech.realtime.wire.content_limits import VOICE_MAX_CHARS, VOICE_PATTERN, ContentLimits
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.mcp_tools import (
    McpServerSpec,
    McpTool,
    is_masked,
    local_servers,
    masked,
    spec_of,
)
from speech_to_speech.realtime.wire.voices import VoiceCatalog, requested_voice

if TYPE_CHECKING:
    from speech_to_speech.config import ServerSettings

# The session fields a client may set: the GA session object's, and our ``extensions``.
SETTABLE_FIELDS = frozenset({"type", "audio", "include", "instructions", "max_output_tokens", "output_modalities",
                             "parallel_tool_calls", "prompt", "reasoning", "tool_choice", "tools", "tracing",
                             "truncation", "extensions", "playback_commit_policy", "preamble_after_ms"})
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
# What speech over the assistant does (docs/sessions.md, "Overlap policy"): top-level fields too, with their
# defaults; the policy itself is conversation.overlap.
OVERLAP_DEFAULTS: dict[str, Any] = {"overlap_policy": ADAPTIVE, "overlap_short_ack_ms": 700,
                                    "overlap_barge_in_ms": 1200}
OVERLAP_FIELDS = frozenset(OVERLAP_DEFAULTS)
MAX_THRESHOLD_MS = 60000
SETTABLE_FIELDS = SETTABLE_FIELDS | OVERLAP_FIELDS


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
    overlap_short_ack_ms: int = Field(default=700, ge=0, le=MAX_THRESHOLD_MS, strict=True)
    overlap_barge_in_ms: int = Field(default=1200, ge=0, le=MAX_THRESHOLD_MS, strict=True)
    extensions: list[str] | None = None
    # How much of an answer enters the LLM's history (docs/sessions.md, "Playback truth").
    playback_commit_policy: PlaybackCommitPolicy = COMMIT_ALL_ON_DONE
    # Our extension: silence (ms) before a preamble; None: never say one.
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


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Merge ``patch`` into a copy of ``base``: objects recurse, everything else replaces."""
    merged = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _validation_message(error: ValidationError) -> tuple[str, str]:
    first = error.errors()[0]
    param = "session." + ".".join(str(p) for p in first["loc"])
    return f"Invalid value for '{param}': {first['msg']}", param


class SessionState:
    """One session's wire config and the RuntimeConfig derived from it."""

    def __init__(self, *, model: str, instructions: str, voice: str, startup_reasoning: str | None,
                 vad_threshold: float, silence_ms: int, prefix_ms: int, transcription_model: str,
                 limits: ContentLimits | None = None, semantic_turns: bool = False,
                 voices: VoiceCatalog | None = None, local_mcp: dict[str, McpServerSpec] | None = None) -> None:
        self.startup_reasoning = startup_reasoning
        self.limits = limits or ContentLimits()
        self.voices = voices or VoiceCatalog()
        # The unit has a turn detector: sessions start with semantic_vad and may ask for it.
        self.semantic_turns = semantic_turns
        # The client set overlap_policy, so it knows overlap.decision: it is told every decision.
        self.reports_overlap = False
        # The MCP servers this process was started with (--mcp_server), and those the session's tools name,
        # with the headers the echo masks.
        self.local_mcp = dict(local_mcp or {})
        self._named_mcp: tuple[McpServerSpec, ...] = ()
        self._vad_defaults = {"threshold": vad_threshold, "prefix_padding_ms": prefix_ms,
                              "silence_duration_ms": silence_ms, "idle_timeout_ms": None}
        self.session: dict[str, Any] = {
            "type": "realtime",
            "object": "realtime.session",
            "id": ids.new_id("sess"),
            "model": model,
            "output_modalities": ["audio"],
            "instructions": instructions,
            "audio": {
                "input": {
                    "format": {"type": "audio/pcm", "rate": WIRE_RATE},
                    "transcription": {"model": transcription_model, "language": None, "prompt": None},
                    "noise_reduction": None,
                    "turn_detection": self._turn_detection_defaults(
                        "semantic_vad" if semantic_turns else "server_vad"),
                },
                "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": voice, "speed": 1.0},
            },
            "tools": [],
            "tool_choice": "auto",
            "max_output_tokens": "inf",
            "tracing": None,
            "truncation": "auto",
            **OVERLAP_DEFAULTS,
            "prompt": None,
            "reasoning": {"effort": startup_reasoning} if startup_reasoning else None,
            "extensions": [],
            "playback_commit_policy": COMMIT_ALL_ON_DONE,
            "preamble_after_ms": DEFAULT_PREAMBLE_AFTER_MS,
        }
        self._default_instructions = instructions

    @classmethod
    def for_server(cls, settings: ServerSettings, *, semantic_turns: bool = False,
                   voices: VoiceCatalog | None = None) -> SessionState:
        """A new session with the server's defaults (its prompt, voice, VAD and STT settings).

        ``semantic_turns``: the unit has a turn detector, so ``semantic_vad`` is the default and is honoured.
        ``voices``: the names a client may choose (by default, any well-formed one).
        """
        return cls(
            model="speech-to-speech",
            instructions=settings.llm.init_chat_prompt,
            voice=settings.tts.voice or "alloy",
            startup_reasoning=settings.llm.responses_api_reasoning_effort,
            vad_threshold=settings.vad.thresh,
            silence_ms=settings.vad.min_silence_ms,
            prefix_ms=settings.vad.speech_pad_ms,
            transcription_model=settings.stt.model or settings.stt.backend,
            limits=ContentLimits(settings.limits.max_instructions_chars, settings.limits.max_tools),
            semantic_turns=semantic_turns,
            voices=voices,
            local_mcp=local_servers(settings.tools.mcp_server),
        )

    # ------------------------------------------------------------ update

    def apply_update(self, patch: Any, event_id: str | None) -> RuntimeConfig:
        """Validate and merge one ``session.update``; raises RealtimeError, changing nothing."""
        if not isinstance(patch, dict):
            raise RealtimeError(INVALID_REQUEST, "'session' must be an object", param="session", event_id=event_id)
        if patch.get("type", "realtime") != "realtime":
            raise RealtimeError(
                INVALID_SESSION_TYPE,
                f"Session type {patch.get('type')!r} is not supported; this server serves 'realtime' sessions",
                param="session.type",
                event_id=event_id,
            )
        voice = requested_voice(patch, "session")
        if voice is not None:
            self.voices.check(voice, event_id)
        # Fields outside the session object (and id/object/model, which are fixed) are ignored:
        # neither stored nor echoed in session.updated, where strict clients would reject them.
        patch = {key: value for key, value in patch.items() if key in SETTABLE_FIELDS}
        if voice is not None and voice.legacy:
            patch = _with_voice(patch, voice.value)
        merged = deep_merge(self.session, patch)
        # An object with a "type" replaces the old one rather than mixing fields: a new
        # turn-detection type keeps no stale thresholds, audio/pcmu no PCM rate.
        for direction, key in (("input", "turn_detection"), ("input", "format"), ("output", "format")):
            value = _nested(patch, "audio", direction, key)
            if isinstance(value, dict) and "type" in value:
                defaults = self._turn_detection_defaults(value["type"]) if key == "turn_detection" else {}
                merged["audio"][direction][key] = {**defaults, **value}
        if "truncation" in patch:
            merged["truncation"] = copy.deepcopy(patch["truncation"])  # a whole rule, never a mix of two
        self._without_unserved_semantic_vad(merged)
        if "reasoning" in patch:
            reasoning = patch["reasoning"]
            if reasoning is None:
                merged["reasoning"] = {"effort": self.startup_reasoning} if self.startup_reasoning else None
            elif isinstance(reasoning, dict) and "effort" not in reasoning:
                merged["reasoning"] = self.session.get("reasoning")
        if merged.get("instructions") is None:
            merged["instructions"] = self._default_instructions
        try:
            parsed = SessionModel.model_validate(merged)
        except ValidationError as error:
            message, param = _validation_message(error)
            raise RealtimeError(INVALID_REQUEST, message, param=param, event_id=event_id) from None
        self.limits.check("session", parsed.instructions,
                          [tool.model_dump(exclude_none=True) for tool in parsed.tools or []], event_id)
        if "tools" in patch:
            named = self._mcp_specs(parsed, event_id)
            merged["tools"] = [masked(tool) if isinstance(tool, dict) else tool for tool in merged["tools"] or []]
        config = runtime_config(parsed)
        if "tools" in patch:
            self._named_mcp = named
        self.session = merged
        self.reports_overlap = self.reports_overlap or "overlap_policy" in patch
        return config

    def _mcp_specs(self, parsed: SessionModel, event_id: str | None) -> tuple[McpServerSpec, ...]:
        specs = []
        for index, tool in enumerate(parsed.tools or []):
            if not isinstance(tool, McpTool):
                continue
            dumped = tool.model_dump(exclude_none=True)
            kept = next((s for s in self._named_mcp if s.label == tool.server_label
                         and s.url == tool.server_url), None)
            # A client that sends back the session it was echoed keeps the secrets it gave before.
            spec = kept if is_masked(dumped) and kept is not None else spec_of(tool, self.local_mcp)
            if spec is None:
                raise RealtimeError(INVALID_REQUEST, f"MCP tool {tool.server_label!r} has no server_url and this "
                                    "server was started with no --mcp_server of that name",
                                    param=f"session.tools[{index}].server_url", event_id=event_id)
            specs.append(spec)
        return tuple(specs)

    @property
    def mcp_servers(self) -> tuple[McpServerSpec, ...]:
        """The MCP servers of the session: those its tools name, and the local ones it did not name."""
        named = {spec.label for spec in self._named_mcp}
        return self._named_mcp + tuple(spec for label, spec in self.local_mcp.items() if label not in named)

    def _turn_detection_defaults(self, kind: Any) -> dict[str, Any]:
        # session.updated echoes the effective config: clients read create_response and
        # interrupt_response back (@openai/agents cancels on barge-in itself unless the
        # server says it does), so a bare {"type": ...} gets the values it runs with.
        defaults: dict[str, Any] = {"type": kind, "create_response": True, "interrupt_response": True}
        if kind == "semantic_vad" and self.semantic_turns:
            defaults["eagerness"] = "auto"
        elif kind in ("server_vad", "semantic_vad"):
            defaults.update(self._vad_defaults)
        return defaults

    def _without_unserved_semantic_vad(self, merged: dict[str, Any]) -> None:
        """Without a turn detector, ``semantic_vad`` is served by silence: the echo says ``server_vad``.

        ``session.updated`` reports what is in force, so a client is not told
        its turns are judged by meaning when a silence window ends them.
        """
        td = _nested(merged, "audio", "input", "turn_detection")
        if self.semantic_turns or not isinstance(td, dict) or td.get("type") != "semantic_vad":
            return
        kept = {k: td[k] for k in ("create_response", "interrupt_response", "threshold") if k in td}
        merged["audio"]["input"]["turn_detection"] = {**self._turn_detection_defaults("server_vad"), **kept,
                                                      "type": "server_vad"}

    # ------------------------------------------------------------ views

    @property
    def input_format(self) -> dict[str, Any]:
        fmt: dict[str, Any] = self.session["audio"]["input"].get("format") or {}
        return fmt

    @property
    def playback_commit_policy(self) -> str:
        return str(self.session.get("playback_commit_policy") or COMMIT_ALL_ON_DONE)

    @property
    def output_format(self) -> dict[str, Any]:
        fmt: dict[str, Any] = self.session["audio"]["output"].get("format") or {}
        return fmt

    def runtime_config(self) -> RuntimeConfig:
        return runtime_config(SessionModel.model_validate(self.session))


def truncation(value: Literal["auto", "disabled"] | RetentionRatio | None) -> Truncation:
    """The session's ``truncation`` as the LLM stage applies it (llm/context_window.py)."""
    if value == "disabled":
        return Truncation(retention_ratio=None)
    if isinstance(value, RetentionRatio):
        limits = value.token_limits
        return Truncation(value.retention_ratio, limits.post_instructions if limits else None)
    return Truncation(AUTO_RETENTION_RATIO)


def _with_voice(patch: dict[str, Any], voice: Any) -> dict[str, Any]:
    """``patch`` with a beta client's top-level voice where the GA session keeps it."""
    audio = patch.get("audio", {})
    if not isinstance(audio, dict) or not isinstance(audio.get("output", {}), dict):
        return patch  # a malformed audio object is refused as it stands
    return deep_merge(patch, {"audio": {"output": {"voice": voice}}})


def _nested(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def format_rate(fmt: dict[str, Any]) -> int:
    if fmt.get("type", "audio/pcm") in ("audio/pcmu", "audio/pcma"):
        return 8000
    return int(fmt.get("rate") or WIRE_RATE)


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
