"""Names of our extensions to the Realtime protocol, shared by the server, the client and the benches.

A client opts in with ``session.update``'s ``session.extensions``:

- ``speech_to_speech.input_audio_transcription.snapshot``: besides the
  append-only transcription deltas, a replaceable snapshot of the user's
  words so far (an event of that type, with ``item_id`` and ``transcript``).
- ``speech_to_speech.timings``: every ``response.done`` carries the server's
  stage marks (Unix epoch milliseconds, as a JSON object) in its metadata
  under ``s2s_timings``; an automatic response whose turn the turn detector
  ended also carries its decision under ``s2s_turn_detection`` (detector,
  outcome, probability, inference_ms, the pause's words and the STT's
  ``continuation``: its doubt that they end there), and the marks ``turn_asked`` and
  ``turn_decided``.
- ``speech_to_speech.output_audio.visemes``: with ``--enable_visemes`` on the
  server, an event of that type before each ``response.output_audio.delta``
  with the mouth shapes of that chunk (docs/visemes.md).
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]  # one Realtime event, as its JSON object

SNAPSHOT_EXTENSION = "speech_to_speech.input_audio_transcription.snapshot"
TIMINGS_EXTENSION = "speech_to_speech.timings"
TIMINGS_KEY = "s2s_timings"
TURN_DETECTION_KEY = "s2s_turn_detection"
VISEMES_EXTENSION = "speech_to_speech.output_audio.visemes"

# WebSocket close codes (RFC 6455) that the server sends and the client reads.
NORMAL_CLOSURE = 1000
GOING_AWAY = 1001
NO_STATUS_RECEIVED = 1005  # a close frame without a code
ABNORMAL_CLOSURE = 1006  # the connection lost without a close frame
POLICY_VIOLATION = 1008
INTERNAL_ERROR = 1011
TRY_AGAIN_LATER = 1013  # what a browser refused by the session gate gets
