"""speech-to-speech: a local-first voice-agent server for OpenAI Realtime clients."""

__version__ = "0.1.0"
