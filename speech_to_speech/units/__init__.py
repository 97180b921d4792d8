"""Pipeline units: one per session, assembled from the registered backends (builder), pooled (pool).

The layer above the stages: it may import the registry, config and every stage; the stages import
only ``speech_to_speech.pipeline`` (messages, handler base, cancel scope, queues, session config).
"""
