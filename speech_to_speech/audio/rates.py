"""The sample rates the pipeline is built around: one place, so no stage can disagree with another.

A model's own rate stays with its backend (Whisper's and Smart Turn's 16 kHz,
Kokoro's and hibari's 24 kHz): that is a fact of the model, and a TTS whose
rate differs from ``TTS_RATE`` is resampled by ``TTSHandler``.
"""

from __future__ import annotations

PIPELINE_RATE = 16000  # what the VAD, the turn detector and the STT are fed
TTS_RATE = 24000  # what the TTS stage yields (resampled from its model's rate), what playback counts in
WIRE_RATE = 24000  # the Realtime API's pcm16 rate: a session's default input and output
