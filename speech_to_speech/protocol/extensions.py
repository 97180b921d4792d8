"""Names of our extensions to the Realtime protocol.

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
  ``turn_decided``. The metadata keys are in :mod:`speech_to_speech.protocol.metadata`.
- ``speech_to_speech.output_audio.visemes``: with ``--enable_visemes`` on the
  server, an event of that type before each ``response.output_audio.delta``
  with the mouth shapes of that chunk (docs/visemes.md).
- ``speech_to_speech.echo_cancellation``: the server takes the audio it sent
  this session out of the session's microphone audio (docs/echo.md); the
  default of every WebSocket session under ``--echo_cancellation server``.
"""

from __future__ import annotations

SNAPSHOT_EXTENSION = "speech_to_speech.input_audio_transcription.snapshot"
TIMINGS_EXTENSION = "speech_to_speech.timings"
VISEMES_EXTENSION = "speech_to_speech.output_audio.visemes"
ECHO_CANCELLATION_EXTENSION = "speech_to_speech.echo_cancellation"
