"""RealtimeAudioClientConfig: every setting of `talk` (and the client half of `local`).

The same names work as CLI flags (``--send-rate``), as YAML keys under
``runtime.client`` and as keyword arguments from Python.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from speech_to_speech.protocol import SNAPSHOT_EXTENSION
from speech_to_speech.protocol.policies import OverlapPolicy, PlaybackCommitPolicy

DEFAULT_URL = "ws://127.0.0.1:8765/v1/realtime"


class RealtimeAudioClientConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, validate_assignment=True)

    url: str = Field(default=DEFAULT_URL, description="Realtime WebSocket URL.")
    model: str | None = Field(default=None, description="Model name sent as ?model= (the server picks its models).")
    api_key: str | None = Field(default=None, description="Bearer token for servers that want one.")
    send_rate: int = Field(default=24000, ge=8000, le=48000, description="PCM16 rate of the audio we send.")
    recv_rate: int = Field(default=24000, ge=8000, le=48000, description="PCM16 rate we ask the server to speak at.")
    chunk_size: int = Field(default=960, ge=16, description="Samples (at --send-rate) per input_audio_buffer.append.")
    voice: str | None = Field(default=None, description="Assistant voice.")
    instructions: str | None = Field(default=None, description="Session instructions (system prompt).")
    tool_module: str | None = Field(default=None, description="Importable module with TOOLS and execute_tool.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="Realtime function tools.")
    tool_executor: Callable[..., Any] | None = Field(default=None, description="execute_tool(name, arguments).")
    tool_response_create: bool = Field(default=True, description="Follow-up default for plain tool return values.")
    block_mic_during_playback: bool = Field(default=False, description="Send no mic audio while the assistant speaks.")
    echo_cancellation: bool = Field(default=True, description="Take what the speaker plays out of the microphone "
                                    "(with a microphone and a speaker; WAV files are sent as they are).")
    noise_suppression: bool = Field(default=False, description="Also suppress steady noise in the microphone "
                                    "(with echo cancellation).")
    vad_threshold: float | None = Field(default=None, ge=0.0, le=1.0, description="Server VAD threshold.")
    interrupt_response: bool = Field(default=True, description="Let user speech cut the assistant off (barge-in).")
    playback_commit_policy: PlaybackCommitPolicy | None = Field(
        default=None, description="How much of an answer enters the history: all once done, or only what "
        "playback.ack says was heard (unset: the server's default).")
    overlap_policy: OverlapPolicy | None = Field(
        default=None, description="What user speech over the assistant does: cut it off, or let a short "
        "backchannel pass (unset: the server's default).")
    input_device: int | str | None = Field(default=None, description="Microphone (index or name).")
    output_device: int | str | None = Field(default=None, description="Speaker (index or name).")
    input_wav: Path | None = Field(default=None, description="Stream this WAV instead of the microphone.")
    output_wav: Path | None = Field(default=None, description="Record the assistant's speech here (24 kHz).")
    transcript_snapshots: bool = Field(default=True, description="Opt in to speculative transcript snapshots.")
    jitter_ms: int = Field(default=120, ge=0, description="Audio buffered at the start of each response.")
    trailing_silence_ms: int = Field(default=1500, ge=0, description="Silence sent after --input-wav.")
    file_idle_timeout_s: float = Field(default=180.0, gt=0, description="With --input-wav: give up waiting after this.")
    connect_timeout_s: float = Field(default=10.0, gt=0, description="Connection and handshake timeout.")
    show_transcript: bool = Field(default=True, description="Render the live transcript in the terminal.")

    def session_update(self) -> dict[str, Any]:
        """The session.update that applies this config (only what we set, so server defaults stay)."""
        # No "type": the server's own turn detection (semantic_vad where it has a turn detector) stays.
        turn_detection: dict[str, Any] = {"interrupt_response": self.interrupt_response}
        if self.vad_threshold is not None:
            turn_detection["threshold"] = self.vad_threshold
        output: dict[str, Any] = {"format": {"type": "audio/pcm", "rate": self.recv_rate}}
        if self.voice:
            output["voice"] = self.voice
        session: dict[str, Any] = {
            "type": "realtime",
            "audio": {
                "input": {"format": {"type": "audio/pcm", "rate": self.send_rate}, "turn_detection": turn_detection},
                "output": output,
            },
        }
        if self.instructions:
            session["instructions"] = self.instructions
        if self.tools:
            session["tools"] = list(self.tools)
        if self.transcript_snapshots:
            session["extensions"] = [SNAPSHOT_EXTENSION]
        if self.playback_commit_policy is not None:
            session["playback_commit_policy"] = self.playback_commit_policy
        if self.overlap_policy is not None:
            session["overlap_policy"] = self.overlap_policy
        return {"type": "session.update", "session": session}


def client_section(data: dict[str, Any]) -> dict[str, Any]:
    """``runtime.client`` of a loaded YAML config ({} when absent)."""
    runtime = data.get("runtime") or {}
    if not isinstance(runtime, dict):
        raise ValueError("'runtime' must be a mapping")
    section = runtime.get("client") or {}
    if not isinstance(section, dict):
        raise ValueError("'runtime.client' must be a mapping")
    return dict(section)
