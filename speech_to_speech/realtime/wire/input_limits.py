"""The caps on a session's input audio: what it buffers uncommitted, what waits for the VAD.

A client that appends without ever committing while turn detection is off
(the VAD then keeps every sample for the commit), or faster than the VAD can
take audio, is refused with an error instead of growing the server's memory
without bound. With turn detection on, the VAD keeps only the current turn,
which ``max_speech_ms`` already bounds.
"""

from __future__ import annotations

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import error_codes
from speech_to_speech.realtime.wire.errors import RealtimeError

CHUNK_SAMPLES = 512  # what one queued VAD input item holds


def input_refusal(settings: ServerSettings, uncommitted: int, queued_chunks: int, samples: int, *,
                  manual: bool) -> RealtimeError | None:
    """Why ``samples`` more 16 kHz samples cannot be taken now, or None when they can.

    ``manual``: turn detection is off, so the uncommitted audio is all kept.
    """
    if manual and uncommitted + samples > int(settings.limits.max_uncommitted_audio_s * PIPELINE_RATE):
        return RealtimeError(error_codes.INPUT_AUDIO_BUFFER_FULL,
                             f"The input audio buffer holds {settings.limits.max_uncommitted_audio_s:g} s at most: "
                             "commit or clear it", param="audio")
    if (queued_chunks * CHUNK_SAMPLES) + samples > int(settings.limits.max_queued_input_s * PIPELINE_RATE):
        return RealtimeError(error_codes.INPUT_QUEUE_FULL,
                             "Input audio arrives faster than it is processed; send it in real time", param="audio")
    return None
