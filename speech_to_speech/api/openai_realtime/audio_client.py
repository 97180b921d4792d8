"""The spec's import path for the packaged client; the code lives in ``speech_to_speech.client``."""

from speech_to_speech.client import RealtimeAudioClientConfig, ToolResult, listen_and_play_realtime

__all__ = ["RealtimeAudioClientConfig", "ToolResult", "listen_and_play_realtime"]
