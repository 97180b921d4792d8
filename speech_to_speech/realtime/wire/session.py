"""The Realtime session object: defaults, ``session.update`` deep merge, validation.

The wire shape (what ``session.created``/``session.updated`` echo) is kept as
a plain dict; each update is merged into a copy, validated with the models
of wire/session_model.py, and only then swapped in, together with the RuntimeConfig
derived from it once: the session's parts read it here (:attr:`SessionState.config`), and
the pipeline unit is told it (:meth:`SessionState.publish_to`). A rejected update changes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from speech_to_speech import ids
from speech_to_speech.audio.rates import WIRE_RATE
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.protocol.error_codes import INVALID_REQUEST, INVALID_SESSION_TYPE
from speech_to_speech.protocol.policies import (
    ADAPTIVE,
    COMMIT_ALL_ON_DONE,
)
from speech_to_speech.realtime.wire.content_limits import ContentLimits
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.mcp_tools import (
    McpServerSpec,
    McpTool,
    is_masked,
    local_servers,
    masked,
    spec_of,
)
from speech_to_speech.realtime.wire.session_model import (
    DEFAULT_OVERLAP_BARGE_IN_MS,
    DEFAULT_OVERLAP_SHORT_ACK_MS,
    DEFAULT_PREAMBLE_AFTER_MS,
    SessionModel,
    runtime_config,
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
OVERLAP_DEFAULTS: dict[str, Any] = {"overlap_policy": ADAPTIVE, "overlap_short_ack_ms": DEFAULT_OVERLAP_SHORT_ACK_MS,
                                    "overlap_barge_in_ms": DEFAULT_OVERLAP_BARGE_IN_MS}
OVERLAP_FIELDS = frozenset(OVERLAP_DEFAULTS)
SETTABLE_FIELDS = SETTABLE_FIELDS | OVERLAP_FIELDS


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
    """One session's wire config and the RuntimeConfig derived from it, once per change."""

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
        # The runtime config of the session object as it is: derived once per change, read by the session's
        # parts, and handed to whoever publish_to names (the pipeline unit, whose threads read its copy).
        self.config = runtime_config(SessionModel.model_validate(self.session))
        self._publish: Callable[[RuntimeConfig], None] = lambda config: None

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

    def publish_to(self, sink: Callable[[RuntimeConfig], None]) -> None:
        """Tell ``sink`` the runtime config now and after each change (the unit's ``config.replace``)."""
        self._publish = sink
        sink(self.config)

    def apply_update(self, patch: Any, event_id: str | None,
                     check_language: Callable[[str | None, str | None], str | None] | None = None) -> RuntimeConfig:
        """Validate and merge one ``session.update``; raises RealtimeError, changing nothing. The config it
        derived (``check_language``: the server's check of its language, which may normalise it)."""
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
        if check_language is not None:
            config = config.model_copy(update={"language": check_language(config.language, event_id)})
        if "tools" in patch:
            self._named_mcp = named
        self.session = merged
        self.reports_overlap = self.reports_overlap or "overlap_policy" in patch
        self._changed(config)
        return config

    def restore(self, session: dict[str, Any]) -> None:
        """Become the session object a store kept (a session taken over from another replica)."""
        self.session = copy.deepcopy(session)
        self._changed(runtime_config(SessionModel.model_validate(self.session)))

    def _changed(self, config: RuntimeConfig) -> None:
        self.config = config
        self._publish(config)

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
