"""The sample rates the pipeline is built around: one place, so no stage can disagree with another."""

from __future__ import annotations

PIPELINE_RATE = 16000  # what the VAD, the turn detector and the STT take (the models' own rate)
TTS_RATE = 24000  # what every TTS yields, and what playback counts in
WIRE_RATE = 24000  # the Realtime API's pcm16 rate: a session's default input and output
