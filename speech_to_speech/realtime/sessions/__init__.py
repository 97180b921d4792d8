"""Session lifetime: how a session gets in, and how it outlives its socket.

Owns admission (per-address limits, then a pipeline unit), the live session
that keeps its service and unit between sockets, the resume tokens, the
replay journal and its stores (memory or Redis), watching for the ends no
event announces, and a session moving between replicas. May import
``service``, ``conversation``, ``connection``, ``wire`` and ``metrics``.
"""
