"""Conversation state: the items, the response on the wire, and what the user heard of it.

The conversation and the history the LLM is given, the life of each
response, the held speculative reply and its take-back, speech over the
answer (the overlap policy), playback truth and text marks, the input audio
buffer, and the session's echo reference. Pure state and rules with no
transport of their own; may import ``connection`` and ``wire``.
"""
