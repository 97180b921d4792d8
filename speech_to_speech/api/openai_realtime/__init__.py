"""Aliases for ``speech_to_speech.api.openai_realtime.*`` paths (the spec's tool-module example)."""
