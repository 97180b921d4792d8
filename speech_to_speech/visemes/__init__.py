"""Visemes: the mouth shapes of the assistant's speech, timed against its audio (docs/visemes.md)."""
