"""Where a resumable session's state lives besides the process serving it (``--session_store``).

The store owns what another replica needs to take a session over: its
replay journal, its resume-token digest, its session object and its
conversation history as the LLM is given it, and who owns it now (a
lease). The live session never waits for it: its in-memory journal stays
the truth for the socket it serves, and the store is a mirror written
behind it (``mirror.py``).

- ``memory`` (the default): nothing leaves the process; a session can be
  resumed only on the server that holds it (:class:`MemoryStore`).
- ``redis://host:port/db``: Redis holds it, so a ``session.resume`` may land
  on any replica, and a session outlives the loss of its server
  (:class:`~speech_to_speech.realtime.sessions.store.redis_store.RedisStore`).
"""

from __future__ import annotations

from collections.abc import Callable

from speech_to_speech.config import ServerSettings
from speech_to_speech.realtime.sessions.store.base import SessionLink, SessionStore, StoredSession, Takeover
from speech_to_speech.realtime.sessions.store.memory import MemoryStore

REDIS_EXTRA_HINT = "pip install 'speech-to-speech[redis]'"


# How long a replica owns a session without renewing it: how soon a dead replica's sessions can move.
LEASE_S = 3.0


def open_store(settings: ServerSettings, on_write: Callable[[str, int], None] | None = None) -> SessionStore:
    """The store ``--session_store`` names: ``memory``, or ``redis://host:port/db``.

    ``on_write(outcome, count)``: told of every write (ok, dropped, failed), for ``/metrics``.
    """
    url = settings.server.session_store
    if url == "memory":
        return MemoryStore()
    if url.startswith(("redis://", "rediss://", "unix://")):
        try:
            from speech_to_speech.realtime.sessions.store.redis_store import RedisStore
        except ImportError as error:  # the redis package is an extra
            raise RuntimeError(f"--session_store {url} needs the redis package: {REDIS_EXTRA_HINT}") from error
        # Keys outlive a dead server by the grace its sessions had, and the journal's age.
        keep_s = max(settings.limits.disconnect_grace_s, settings.limits.replay_journal_ttl_s) + LEASE_S
        return RedisStore(url, lease_s=LEASE_S, keep_s=keep_s, max_bytes=settings.limits.replay_journal_max_bytes,
                          ttl_s=settings.limits.replay_journal_ttl_s, on_write=on_write)
    raise ValueError(f"--session_store must be 'memory' or a redis:// URL, not {url!r}")


__all__ = ["MemoryStore", "SessionLink", "SessionStore", "StoredSession", "Takeover", "open_store"]
