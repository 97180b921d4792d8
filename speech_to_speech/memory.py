"""Keeping the server's resident memory close to what its models need.

glibc's defaults suit short programs, not a server that loads models once and
then allocates audio and decoding buffers on a dozen threads: every thread
may get its own heap arena, and what is freed inside a heap stays with the
process. So: two arenas, and the free pages handed back after loading and
after sessions (see AfterSessions: a trim walks the heap holding its locks,
and 48 sessions ending together made 48 trims that cost the sessions still
talking 50-100 ms). Fixed trim/mmap thresholds would hand back more, but
setting either turns off glibc's adaptive mmap threshold, and every large
buffer then costs an mmap and page faults: LLM, STT and TTS ran 20-30 %
slower here with them, so they are not set. MKL (inside CTranslate2) would
keep a buffer cache per thread; it is turned off too (see tune_allocator).
Off glibc (macOS, musl) the allocator is left alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import cache

M_ARENA_MAX = -8  # mallopt's parameter number, from <malloc.h>
ARENAS = 2  # threads share two heaps; the model runtimes keep their own pools


@cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        libc.mallopt  # noqa: B018 - musl and others lack these: check once
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def tune_allocator() -> bool:
    """Two heap arenas for all threads, no MKL buffer cache; call before the models load. False if not glibc."""
    # CTranslate2's MKL keeps a buffer cache per thread, so per pipeline unit (~18 MB after use
    # here). Without it a transcription takes ~10 % longer, off the critical path of a turn
    # (speculation transcribes during the pause). An explicit setting, even empty, is kept.
    os.environ.setdefault("MKL_DISABLE_FAST_MM", "1")
    libc = _libc()
    return libc is not None and libc.mallopt(M_ARENA_MAX, ARENAS) == 1


def release_free_memory() -> bool:
    """Return the heap's free pages to the system (after loading, after a session). False if not glibc."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


class AfterSessions:
    """When to hand freed memory back as sessions end: when the last one ends, else now and then.

    A server with sessions left gets one release per ``interval_s`` at most,
    so a crowd of sessions ending together costs the others one pause, not
    one each; when no session is left, memory goes back at once.
    """

    def __init__(self, interval_s: float = 300.0, release: Callable[[], object] = release_free_memory,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self._release = release
        self._clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None

    def session_ended(self, sessions_left: int) -> bool:
        """Release now if due; True when it did."""
        with self._lock:
            now = self._clock()
            if sessions_left > 0 and self._last is not None and now - self._last < self.interval_s:
                return False
            self._last = now
        self._release()
        return True
