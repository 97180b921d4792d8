"""When a user's turn ends: the decision, apart from the audio it is made on.

The VAD (:mod:`speech_to_speech.vad.base`) segments speech and carries out
what :class:`~speech_to_speech.turns.controller.TurnController` answers; the
controller weighs each pause (its length in audio milliseconds, the Smart Turn
verdict, the words of its speculative STT pass, whether the reply to them can
play) by the rules in :mod:`speech_to_speech.turns.rules`.

This package owns the decision and nothing else: it holds no queue, thread or
clock, and imports only the pipeline's messages and session config.
"""
