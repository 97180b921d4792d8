"""What a session's connection needs: the transport interface, serialised frames, the bounded outbound queue,
and audio formats on the wire. May import ``wire`` only.
"""
