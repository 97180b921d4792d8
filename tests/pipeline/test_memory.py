"""The allocator settings and trimming that keep the server's idle memory down (glibc on Linux)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator is Linux's")

# Many heap-sized blocks freed out of order leave a fragmented heap that glibc keeps by default.
SCRIPT = """
import psutil
from speech_to_speech.memory import release_free_memory, tune_allocator
print(tune_allocator())
rss = lambda: psutil.Process().memory_info().rss
base = rss()
blocks = [bytearray(64 * 1024) for _ in range(4000)]  # ~250 MB in 64 KiB pieces
keep = blocks[::16]  # every 16th stays: the heap's top cannot simply shrink
del blocks
freed = rss()
print(release_free_memory())
print((freed - base) >> 20, (rss() - base) >> 20)
"""


def test_freed_memory_goes_back_to_the_system() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    tuned, trimmed, sizes = done.stdout.splitlines()
    held_before_trim, held_after_trim = (int(v) for v in sizes.split())
    assert (tuned, trimmed) == ("True", "True")
    assert held_before_trim > 200  # freed, but still the process's: the holes are not at the top
    assert held_after_trim < 40  # trimmed: only the ~16 MB still in use is held
