"""One thread for the thread pools no stage of ours sizes, set before any of them starts.

Every model stage sets its own thread count from :mod:`speech_to_speech.cpu`:
faster-whisper's ``cpu_threads``, onnxruntime's ``intra_op_num_threads``,
llama.cpp's ``n_threads``, ``torch.set_num_threads``. What is left are the pools
that nothing sizes: numpy's OpenBLAS and the OpenMP runtimes' default teams
(CTranslate2 bundles one), which start one thread per CPU and spin on them
after each call, on the cores the stages beside them were counted to have.
Measured on the 2-core Xeon (AVX-512): Whisper tiny.en's pass alone 102 ms
as installed, 72 ms with one thread there; beside a Smart Turn verdict, the
pass 137-142 ms and the verdict 109-117 ms, against 75 and 51 ms with one
thread; in ``serve``, the pause's STT pass p50 127 -> 86 ms.

The runtimes read ``OMP_NUM_THREADS`` once, when they load, so it must be set
before numpy or any backend is imported: the command line's entry point
(:mod:`speech_to_speech.launch`) does it first. A value the user set is kept.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

VARIABLE = "OMP_NUM_THREADS"
THREADS = "1"


def limit_unsized_pools(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Give the unsized pools one thread unless the user chose a count; whether it was set here."""
    if environ.get(VARIABLE, "").strip():
        return False
    environ[VARIABLE] = THREADS
    return True
