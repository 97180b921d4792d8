"""When a user's turn ends: the decisions, apart from the audio they are made on.

The VAD segments speech (:mod:`speech_to_speech.vad.segmenter`) and its turn
host (:mod:`speech_to_speech.vad.turn_host`) carries out what
:class:`~speech_to_speech.turns.controller.TurnController` answers; the
controller weighs each pause (its length in audio milliseconds, the Smart Turn
verdict, the words of its speculative STT pass, whether the reply to them can
play) by the rules in :mod:`speech_to_speech.turns.rules`. Whose speech it is
(user_level.py, user_voice.py) and when the speech so far goes to the STT
(speech_so_far.py) are decided here too.

This package owns the decisions and nothing else: it holds no queue, thread or
clock, and imports only the pipeline's messages and session config.
"""
