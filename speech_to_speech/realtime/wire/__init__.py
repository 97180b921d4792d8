"""The wire contract as the server enforces it: parsing client events, protocol errors, the session object and
its validation, conversation items, limits, languages and voices.

The names both sides share (extensions, error codes, metadata keys) are in
:mod:`speech_to_speech.protocol`. Imports no other room of ``realtime``.
"""
