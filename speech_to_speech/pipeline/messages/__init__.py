"""Typed, immutable items that travel on the queues of a pipeline unit, one module per part of the
pipeline: ``ownership`` (what a response's items share), ``control``, ``input_audio`` (audio in and
what the VAD makes of it), ``transcription``, ``generation`` (the LLM's requests and answers),
``speech_output`` (the TTS's and the viseme stage's) and ``turn_taking`` (the turn detector, the VAD
and the service deciding where a turn ends).

Audio is numpy data: treat arrays as read-only once they are on a queue. Which queue carries what is
``pipeline/queue_items.py``.
"""
