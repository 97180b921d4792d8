"""RuntimeConfig: the per-session settings that handlers read at processing time.

The protocol layer translates client requests (``session.update``) into a new
RuntimeConfig and swaps it in atomically; handler threads read whatever is
current when they start an item, so a change applies from the next turn,
clause or chunk on without locks on the hot path.
"""

from __future__ import annotations

import threading
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from speech_to_speech.pipeline.messages.generation import Truncation


class TurnDetection(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["server_vad", "semantic_vad"] = "server_vad"
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    silence_duration_ms: int | None = Field(default=None, ge=0)
    prefix_padding_ms: int | None = Field(default=None, ge=0)
    interrupt_response: bool = True
    create_response: bool = True
    eagerness: Literal["low", "medium", "high", "auto"] | None = None


class RuntimeConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    instructions: str | None = None
    voice: str | None = None
    language: str | None = None
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: str | dict[str, Any] = "auto"
    # None turns server VAD off: turns end on commit, responses start on request.
    turn_detection: TurnDetection | None = TurnDetection()
    reasoning_effort: str | None = None
    max_output_tokens: int | None = None
    output_modalities: tuple[str, ...] = ("audio",)
    extensions: tuple[str, ...] = ()
    # listen_only sessions: the VAD reports (SpeechOngoing) when an utterance's voiced span reaches it.
    overlap_barge_in_ms: int | None = None
    truncation: Truncation = Truncation()
    # audio.input.noise_reduction: the service cleans the microphone audio before the VAD hears it.
    noise_reduction: Literal["near_field", "far_field"] | None = None

    @property
    def interrupt_response_enabled(self) -> bool:
        return self.turn_detection is None or self.turn_detection.interrupt_response

    @property
    def server_vad_enabled(self) -> bool:
        return self.turn_detection is not None

    def has_extension(self, name: str) -> bool:
        return name in self.extensions


class ConfigHolder:
    """Holds the current RuntimeConfig of one unit; swaps are atomic."""

    def __init__(self, initial: RuntimeConfig | None = None) -> None:
        self._default = initial or RuntimeConfig()
        self._current = self._default
        self._lock = threading.Lock()

    @property
    def current(self) -> RuntimeConfig:
        return self._current

    @property
    def default(self) -> RuntimeConfig:
        return self._default

    def replace(self, config: RuntimeConfig) -> None:
        with self._lock:
            self._current = config

    def update(self, **changes: Any) -> RuntimeConfig:
        with self._lock:
            self._current = self._current.model_copy(update=changes)
            return self._current

    def reset(self) -> None:
        with self._lock:
            self._current = self._default
