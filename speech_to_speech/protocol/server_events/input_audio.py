"""What the server says of the user's audio: speech heard, a turn committed, its transcription.

A user turn's audio is the only content part of its item, so every event of it
names ``content_index`` 0.
"""

from typing import Literal, TypedDict

from speech_to_speech.protocol.server_events.shapes import TranscriptionError


class InputAudioBufferSpeechStarted(TypedDict):
    type: Literal["input_audio_buffer.speech_started"]
    audio_start_ms: int
    item_id: str | None


class InputAudioBufferSpeechStopped(TypedDict):
    type: Literal["input_audio_buffer.speech_stopped"]
    audio_end_ms: int
    item_id: str | None


class InputAudioBufferCommitted(TypedDict):
    type: Literal["input_audio_buffer.committed"]
    previous_item_id: str | None
    item_id: str


class InputAudioBufferCleared(TypedDict):
    type: Literal["input_audio_buffer.cleared"]


class TranscriptionUsage(TypedDict):
    type: Literal["duration"]
    seconds: float


class InputAudioTranscriptionDelta(TypedDict):
    type: Literal["conversation.item.input_audio_transcription.delta"]
    item_id: str
    content_index: int
    delta: str


class InputAudioTranscriptionCompleted(TypedDict):
    type: Literal["conversation.item.input_audio_transcription.completed"]
    item_id: str
    content_index: int
    transcript: str
    usage: TranscriptionUsage


class InputAudioTranscriptionFailed(TypedDict):
    type: Literal["conversation.item.input_audio_transcription.failed"]
    item_id: str
    content_index: int
    error: TranscriptionError


class InputAudioTranscriptionSnapshot(TypedDict):
    """Ours (protocol/extensions.py): the user's words so far, replacing the snapshot before."""

    type: Literal["speech_to_speech.input_audio_transcription.snapshot"]
    item_id: str | None
    content_index: int
    transcript: str


def input_audio_buffer_speech_started(audio_start_ms: int, item_id: str | None) -> InputAudioBufferSpeechStarted:
    return {"type": "input_audio_buffer.speech_started", "audio_start_ms": audio_start_ms, "item_id": item_id}


def input_audio_buffer_speech_stopped(audio_end_ms: int, item_id: str | None) -> InputAudioBufferSpeechStopped:
    return {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": audio_end_ms, "item_id": item_id}


def input_audio_buffer_committed(previous_item_id: str | None, item_id: str) -> InputAudioBufferCommitted:
    return {"type": "input_audio_buffer.committed", "previous_item_id": previous_item_id, "item_id": item_id}


def input_audio_buffer_cleared() -> InputAudioBufferCleared:
    return {"type": "input_audio_buffer.cleared"}


def input_audio_transcription_delta(item_id: str, delta: str) -> InputAudioTranscriptionDelta:
    return {"type": "conversation.item.input_audio_transcription.delta", "item_id": item_id, "content_index": 0,
            "delta": delta}


def input_audio_transcription_completed(item_id: str, transcript: str,
                                        audio_seconds: float) -> InputAudioTranscriptionCompleted:
    """``audio_seconds``: the turn's audio, which the usage reports to the millisecond."""
    return {"type": "conversation.item.input_audio_transcription.completed", "item_id": item_id,
            "content_index": 0, "transcript": transcript,
            "usage": {"type": "duration", "seconds": round(audio_seconds, 3)}}


def input_audio_transcription_failed(item_id: str, error: TranscriptionError) -> InputAudioTranscriptionFailed:
    return {"type": "conversation.item.input_audio_transcription.failed", "item_id": item_id, "content_index": 0,
            "error": error}


def input_audio_transcription_snapshot(item_id: str | None, transcript: str) -> InputAudioTranscriptionSnapshot:
    return {"type": "speech_to_speech.input_audio_transcription.snapshot", "item_id": item_id, "content_index": 0,
            "transcript": transcript}
