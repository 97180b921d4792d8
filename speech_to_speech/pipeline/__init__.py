"""The engine's foundation: immutable messages, the handler base, CancelScope, queues, session config,
and the two stages that sit between backends (transcription notifier, LM output processor).

The backends (vad, stt, llm, tts, visemes) build on it; it imports none of them. Assembling a unit
from them is ``speech_to_speech.units``.
"""
