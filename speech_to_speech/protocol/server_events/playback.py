"""What the server says of its own audio once sent: the media track's play-out (WebRTC), the client's
``playback.ack`` answered, and how it judged user speech over that audio (docs/sessions.md)."""

from typing import Literal, NotRequired, TypedDict

from speech_to_speech.protocol.overlap_decisions import OverlapAction, OverlapReason


class OutputAudioBufferStarted(TypedDict):
    type: Literal["output_audio_buffer.started"]
    response_id: str


class OutputAudioBufferStopped(TypedDict):
    type: Literal["output_audio_buffer.stopped"]
    response_id: str


class OutputAudioBufferCleared(TypedDict):
    type: Literal["output_audio_buffer.cleared"]
    response_id: str


class PlaybackFigures(TypedDict):
    """A response's audio in ms: made, sent (not dropped unplayed), played, committed to the history."""

    generated_ms: int
    sent_ms: int
    played_ms: int
    committed_ms: int


class PlaybackAcknowledgement(TypedDict):
    """The body of ``playback.acknowledged`` (the spec nests it under ``event``)."""

    type: Literal["playback.acknowledged"]
    session_id: str | None
    response_id: str
    item_id: str | None
    played_ms: int
    committed_ms: int
    truncate: bool
    playback: PlaybackFigures
    history_committed: bool  # the item's history text is all of its transcript


class PlaybackAcknowledged(TypedDict):
    type: Literal["playback.acknowledged"]
    response_id: str
    item_id: str | None
    event: PlaybackAcknowledgement


class OverlapMetadata(TypedDict):
    overlap_ms: int  # voiced ms of the user's speech over the response
    item_id: str | None
    response_id: str | None
    short_ack_ms: int
    barge_in_ms: int
    transcript: NotRequired[str]  # adaptive: the words that decided


class OverlapDecision(TypedDict):
    type: Literal["overlap.decision"]
    session_id: str | None
    policy: str  # protocol/policies.py
    action: OverlapAction
    reason: OverlapReason
    metadata: OverlapMetadata


def output_audio_buffer_started(response_id: str) -> OutputAudioBufferStarted:
    return {"type": "output_audio_buffer.started", "response_id": response_id}


def output_audio_buffer_stopped(response_id: str) -> OutputAudioBufferStopped:
    return {"type": "output_audio_buffer.stopped", "response_id": response_id}


def output_audio_buffer_cleared(response_id: str) -> OutputAudioBufferCleared:
    return {"type": "output_audio_buffer.cleared", "response_id": response_id}


def playback_acknowledged(session_id: str | None, response_id: str, item_id: str | None, *, played_ms: int,
                          committed_ms: int, truncate: bool, playback: PlaybackFigures,
                          history_committed: bool) -> PlaybackAcknowledged:
    body: PlaybackAcknowledgement = {
        "type": "playback.acknowledged", "session_id": session_id, "response_id": response_id, "item_id": item_id,
        "played_ms": played_ms, "committed_ms": committed_ms, "truncate": truncate, "playback": playback,
        "history_committed": history_committed}
    return {"type": "playback.acknowledged", "response_id": response_id, "item_id": item_id, "event": body}


def overlap_decision(session_id: str | None, policy: str, action: OverlapAction, reason: OverlapReason,
                     metadata: OverlapMetadata) -> OverlapDecision:
    return {"type": "overlap.decision", "session_id": session_id, "policy": policy, "action": action,
            "reason": reason, "metadata": metadata}
