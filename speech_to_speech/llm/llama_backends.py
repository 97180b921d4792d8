"""llama.cpp's CPU kernels, chosen for this CPU when the process starts, where the library holds several.

Why: PyPI has no binary llama-cpp-python, so it is built from source, and a
build for the build machine's own CPU (``GGML_NATIVE``) ties it to that CPU
and crashed on CPUs with AMX, while one portable build settles for AVX2 on
every CPU. Built with
``GGML_BACKEND_DL`` and ``GGML_CPU_ALL_VARIANTS`` (the Makefile's flags),
llama.cpp ships one CPU library per instruction-set level
(``libggml-cpu-haswell.so`` for AVX2, ``-skylakex`` for AVX-512, ``-icelake``
with VNNI, ``-zen4`` with BF16 too, ...) and loads one of them at run time.
llama-cpp-python 0.3.36 loads none by itself: the first ``Llama`` fails with
"no backends are loaded". :func:`load_cpu_kernels` loads one before it.

It scores the variants as ggml's own loader does (each library's
``ggml_backend_score``: 0 where this CPU lacks an instruction the library was
built for, more for more of them), but never picks an AMX one unless asked:
ggml's score reads CPUID, not whether the OS lets a process use the AMX tiles
(a FIXME in its cpu-feats.cpp), and its AMX matrix kernels have segfaulted
with Q4_K_M weights on machines that do (llama.cpp issue 20824). On such a
CPU the best variant left is ``zen4``, built for the same instructions less
the AMX ones.

``S2S_GGML_CPU_VARIANT=haswell`` (or another variant's name) loads that one
instead, e.g. to run the AVX2 kernels on an AVX-512 machine; one this CPU
cannot run is refused with an error, never loaded. A build whose CPU kernels
are linked in (without ``GGML_BACKEND_DL``) is left as it is.

The calls go through libllama's own handle: the wheel holds libggml twice
(``libggml.so`` and ``libggml.so.0`` are copies, not links), and a backend
registered in the copy that ``llama_cpp._ggml`` opens is one libllama never
sees; ``dlsym`` on libllama finds the copy libllama links.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

VARIANT_ENV = "S2S_GGML_CPU_VARIANT"
PREFIX = "libggml-cpu-"
SUFFIX = ".so"
# Known to use AMX tiles, whatever the library says: loaded only when asked for by name (see above).
AMX_VARIANTS = frozenset({"sapphirerapids"})


@dataclass(frozen=True)
class Variant:
    """One CPU variant's library as ggml's loader sees it on this CPU."""

    score: int  # its ggml_backend_score(): 0 if this CPU lacks an instruction it was built for
    amx: bool  # built with the AMX matrix kernels


@dataclass(frozen=True)
class CpuKernels:
    """Which CPU kernels llama.cpp runs in this process."""

    variant: str | None  # None: linked into the library (a build without dynamic backends)
    path: Path | None = None  # the variant's library
    scores: Mapping[str, int] = field(default_factory=dict)  # the variants' scores on this CPU (0: cannot run)
    amx: bool = False  # the AMX kernels: only ever when asked for by name


def variant_folders(package: Path) -> list[Path]:
    """Where a dynamic-backend build of llama-cpp-python keeps its CPU variants.

    Its wheel puts them in a ``bin`` folder beside the ``llama_cpp`` package (site-packages/bin), not in
    ``llama_cpp/lib`` with libllama; both are looked in.
    """
    return [package / "lib", package.parent / "bin"]


def cpu_variants(folders: list[Path]) -> dict[str, Path]:
    """The CPU variants in the first of ``folders`` that holds any, by name (``haswell``, ``zen4`` ...)."""
    for folder in folders:
        found = {path.name[len(PREFIX):-len(SUFFIX)]: path for path in sorted(folder.glob(f"{PREFIX}*{SUFFIX}"))}
        if found:
            return found
    return {}


def probe_variant(path: Path) -> Variant:
    """Ask a variant's library what ggml's loader asks it (its score), and whether it has the AMX kernels.

    Both answers are constants of the library (CPUID and how it was compiled); nothing of it runs
    otherwise, and it is closed again, as ggml's loader closes what it scored.
    """
    import _ctypes

    library = ctypes.CDLL(str(path))
    try:
        def answer(symbol: str) -> int:
            try:
                function = library[symbol]
            except AttributeError:
                return 0
            function.restype, function.argtypes = ctypes.c_int, []
            return int(function())

        return Variant(score=answer("ggml_backend_score"), amx=bool(answer("ggml_cpu_has_amx_int8")))
    finally:
        _ctypes.dlclose(library._handle)


class _Ggml:
    """The few ggml registry calls needed, through a handle whose dependencies hold the right libggml."""

    def __init__(self, handle: ctypes.CDLL) -> None:
        self._by_name = handle["ggml_backend_reg_by_name"]
        self._by_name.restype, self._by_name.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
        self._load = handle["ggml_backend_load"]
        self._load.restype, self._load.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
        self._load_all = handle["ggml_backend_load_all_from_path"]
        self._load_all.restype, self._load_all.argtypes = None, [ctypes.c_char_p]

    def has_cpu(self) -> bool:
        return bool(self._by_name(b"CPU"))

    def load(self, path: Path) -> bool:
        return bool(self._load(os.fsencode(path)))

    def load_all(self, folder: Path) -> None:
        self._load_all(os.fsencode(folder))


def choose_and_load(ggml: Any, package: Path, forced: str | None = None,
                    probe: Callable[[Path], Variant] = probe_variant) -> CpuKernels:
    """Load the CPU kernels for this CPU into ``ggml`` unless it has some; what was chosen.

    ``ggml`` answers ``has_cpu()``, ``load(path)`` and ``load_all(folder)`` (:class:`_Ggml`), ``package``
    is the ``llama_cpp`` folder, ``forced`` names a variant to load instead of the best one without AMX.
    """
    if ggml.has_cpu():
        if forced:
            raise RuntimeError(f"{VARIANT_ENV}={forced}: llama.cpp has its CPU kernels already (linked in, in a "
                               "build without GGML_BACKEND_DL, or loaded before), so there is no variant to choose")
        return CpuKernels(variant=None)
    variants = cpu_variants(variant_folders(package))
    if not variants:  # GGML_BACKEND_DL alone: one CPU library, libggml-cpu.so, which ggml's loader finds
        for folder in variant_folders(package):
            if (folder / f"libggml-cpu{SUFFIX}").is_file():
                ggml.load_all(folder)
                if ggml.has_cpu():
                    return CpuKernels(variant="cpu", path=folder / f"libggml-cpu{SUFFIX}")
        raise RuntimeError(f"this llama-cpp-python was built with GGML_BACKEND_DL but no CPU kernels were "
                           f"found beside {package}")
    if forced:
        if forced not in variants:
            raise RuntimeError(f"{VARIANT_ENV}={forced}: no such llama.cpp CPU variant; there are "
                               f"{', '.join(sorted(variants))}")
        candidates = {forced: probe(variants[forced])}
    else:
        candidates = {name: probe(path) for name, path in variants.items()}
    scores = {name: variant.score for name, variant in candidates.items()}
    allowed = [name for name, variant in candidates.items()
               if forced or not (variant.amx or name in AMX_VARIANTS)]
    chosen = max(allowed, key=lambda name: scores[name], default=None)
    if chosen is None or scores[chosen] <= 0:
        raise RuntimeError(f"this CPU cannot run llama.cpp's {chosen or 'non-AMX'} CPU kernels; "
                           f"their scores here: {scores}")
    if not ggml.load(variants[chosen]) or not ggml.has_cpu():
        raise RuntimeError(f"llama.cpp did not load its {chosen} CPU kernels from {variants[chosen]}")
    return CpuKernels(variant=chosen, path=variants[chosen], scores=scores,
                      amx=candidates[chosen].amx or chosen in AMX_VARIANTS)


_lock = threading.Lock()
_loaded: CpuKernels | None = None


def load_cpu_kernels() -> CpuKernels:
    """Make sure llama.cpp has CPU kernels, once per process (thread-safe); call before the first ``Llama``."""
    global _loaded
    with _lock:
        if _loaded is None:
            from llama_cpp import llama_cpp as bindings

            forced = os.environ.get(VARIANT_ENV, "").strip() or None
            _loaded = choose_and_load(_Ggml(bindings._lib), Path(bindings.__file__).parent, forced)
            if _loaded.variant is None:
                log.debug("llama.cpp's CPU kernels are linked in (a build without GGML_BACKEND_DL)")
            else:
                if _loaded.amx:
                    log.warning("llama.cpp runs its AMX kernels (%s=%s): they have crashed on some CPUs",
                                VARIANT_ENV, _loaded.variant)
                log.info("llama.cpp runs its %s CPU kernels (%s; scores on this CPU: %s)", _loaded.variant,
                         _loaded.path, ", ".join(f"{name} {value}" for name, value in _loaded.scores.items()))
        return _loaded
