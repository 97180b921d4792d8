"""What a session can do, told in ``session.created.session.capabilities``.

Clients branch on these flags, not on the server's name, so they must be
true of the session they describe: a WebRTC session's events travel on a
data channel that dies with its peer connection, so it cannot be resumed;
a WebSocket session can. Client events the server does not accept are not
advertised (a flag is read from the event table, not written by hand).
"""

from __future__ import annotations

from typing import Any

from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.protocol.policies import OVERLAP_POLICIES, PLAYBACK_COMMIT_POLICIES
from speech_to_speech.realtime.conversation.echo import echo_cancellation_available
from speech_to_speech.realtime.service.client_events import CLIENT_EVENTS


def session_capabilities(*, resumable: bool, media_track: bool, multi_session: bool,
                         turn_detector: bool) -> dict[str, Any]:
    """The capabilities object of one session.

    ``resumable``: its socket may drop and a new one take it over; ``media_track``:
    audio travels on a WebRTC track rather than in events; ``multi_session``: the
    server serves several sessions at once; ``turn_detector``: a model, not only
    silence, judges when a turn ends.
    """
    signals = ["server_vad", "client_event"] + (["turn_detector"] if turn_detector else [])
    playback_ack = "playback.ack" in CLIENT_EVENTS
    return {
        "implementation_level": "cascaded",
        "supports_input_append": not media_track,
        "supports_session_resume": resumable,
        "supports_session_lease": True,  # session.heartbeat is answered and holds off the idle timeout
        "supports_playback_ack": playback_ack,
        "supports_barge_in": True,
        # The server takes its own audio out of the microphone's (conversation/echo.py); a browser's track
        # arrives cancelled already.
        "supports_echo_cancellation": not media_track and echo_cancellation_available(),
        "supports_multi_session": multi_session,
        "chunk_period_ms": VAD_CHUNK * 1000 // PIPELINE_RATE,
        "input_modes": ["media_track"] if media_track else ["append_audio_chunk"],
        "signal_sources": signals,
        "overlap_policies": list(OVERLAP_POLICIES),
        "playback_commit_policies": list(PLAYBACK_COMMIT_POLICIES if playback_ack else PLAYBACK_COMMIT_POLICIES[:1]),
    }

