"""``bench startup``: how soon ``speech-to-speech serve`` is ready, and the memory it holds, per unit count.

For every N of ``units``, ``repeat`` times (the unit counts interleaved, so
a drift of the machine spreads over all of them): start ``speech-to-speech
serve --num_pipelines N`` with the bench's server flags as a child process
on a free loopback port, and time it from spawn to the first ``GET /health``
200 (``ready_ms``). ``settle_s`` later the resident memory of its process
tree is ``rss_ready_mb``. Then N sessions at once each say one spoken
question and wait for the answer's ``response.done``, so every unit has run
its models once, and close; once the units are idle again and ``settle_s``
has passed, the tree's RSS is ``rss_idle_mb``. That is idle *after use*:
it counts the model pages inference touched, which a fresh server has not.

``extra_unit_mb`` is what one more unit adds to the idle figure: (median
idle RSS at the largest N - at the smallest N) / (the difference in N).
The same figures as PSS (``pss_*``, ``extra_unit_pss_mb``) count a page
that several mappings share once: RSS counts the model file once for every
llama.cpp context that maps it, so with that backend RSS overstates what a
unit costs (four units: RSS 2.85 GB, PSS 1.43 GB).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.bench import audio, results
from speech_to_speech.bench.events import Clock
from speech_to_speech.bench.latency import ask_fresh
from speech_to_speech.bench.stats import summarize_fields
from speech_to_speech.bench.target import Target, started
from speech_to_speech.config import ServerSettings, flat_settings

log = logging.getLogger(__name__)

FIGURES = ("ready_ms", "rss_ready_mb", "rss_idle_mb", "pss_ready_mb", "pss_idle_mb")


@dataclass(frozen=True)
class StartupConfig:
    units: tuple[int, ...] = (1, 2, 4)
    repeat: int = 3
    settle_s: float = 2.0  # after ready, and after the turns, before memory is read
    questions_dir: Path | None = None
    chunk_ms: int = 100
    timeout_s: float = 120.0


def require_psutil() -> Any:
    try:
        import psutil
    except ImportError:
        raise RuntimeError("bench startup reads memory with psutil: pip install 'speech-to-speech[bench]'") from None
    return psutil


def tree_rss_mb(pid: int) -> float:
    """Resident memory (MiB) of process ``pid`` and all its descendants."""
    return _tree_mb(pid, lambda process: process.memory_info().rss)


def tree_pss_mb(pid: int) -> float | None:
    """Proportional set size (MiB) of ``pid`` and its descendants; None where the OS does not report it."""
    try:
        return _tree_mb(pid, lambda process: process.memory_full_info().pss)
    except (AttributeError, require_psutil().AccessDenied):
        return None


def _tree_mb(pid: int, size: Callable[[Any], int]) -> float:
    psutil = require_psutil()
    root = psutil.Process(pid)
    total = 0
    for process in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):  # a helper that exited meanwhile holds nothing
            total += size(process)
    return round(total / 2**20, 1)


def turn_failed(turn: dict[str, Any]) -> bool:
    return "error" in turn or turn.get("status") != "completed"


async def speak(server: Target, units: int, questions: list[audio.Speech], config: StartupConfig,
                ) -> list[dict[str, Any]]:
    """N sessions at once, one spoken question each (session i says question i): their turns, once idle."""
    clock = Clock.now()

    async def one(index: int) -> dict[str, Any]:
        clip = questions[index % len(questions)]
        try:
            return await ask_fresh(server.ws_url, clip, clock, chunk_ms=config.chunk_ms, timeout_s=config.timeout_s)
        except (TimeoutError, OSError, RuntimeError) as error:
            return {"question": clip.name, "error": f"{type(error).__name__}: {error}"}

    turns = await asyncio.gather(*(one(index) for index in range(units)))
    await server.wait_idle(timeout=config.timeout_s)
    return list(turns)


def measure(settings: ServerSettings, units: int, questions: list[audio.Speech], config: StartupConfig,
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """One server's life: (its sample, the environment read while it was up)."""
    with started(settings.updated(num_pipelines=units)) as (server, child):
        ready_ms = round((child.ready - child.spawned) * 1000.0, 1)
        time.sleep(config.settle_s)
        rss_ready, pss_ready = tree_rss_mb(child.process.pid), tree_pss_mb(child.process.pid)
        turns = asyncio.run(speak(server, units, questions, config))
        time.sleep(config.settle_s)
        rss_idle, pss_idle = tree_rss_mb(child.process.pid), tree_pss_mb(child.process.pid)
        # The bench's flags, not this run's unit count; read last, so nothing above is disturbed.
        env = results.environment(dataclasses.replace(server, settings=settings))
    sample = {"units": units, "ready_ms": ready_ms, "rss_ready_mb": rss_ready, "rss_idle_mb": rss_idle,
              "pss_ready_mb": pss_ready, "pss_idle_mb": pss_idle,
              "errors": sum(1 for turn in turns if turn_failed(turn)), "turns": turns}
    return sample, env


def extra_unit_mb(levels: dict[int, dict[str, Any]], figure: str = "rss_idle_mb") -> float | None:
    """Idle MiB per unit beyond the smallest N, from the medians; None without two measured unit counts."""
    idle = {units: stats[figure]["p50"] for units, stats in levels.items()
            if stats.get(figure, {}).get("p50") is not None}
    if len(idle) < 2:
        return None
    low, high = min(idle), max(idle)
    return round((idle[high] - idle[low]) / (high - low), 1)


def summarize_runs(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """p50/p95 of every figure per unit count, and the cost of one more unit."""
    levels: dict[int, dict[str, Any]] = {}
    for units in sorted({sample["units"] for sample in samples}):
        runs = [sample for sample in samples if sample["units"] == units]
        levels[units] = {**summarize_fields(runs, FIGURES), "errors": sum(run.get("errors", 0) for run in runs)}
    return {"units": {str(units): stats for units, stats in levels.items()}, "extra_unit_mb": extra_unit_mb(levels),
            "extra_unit_pss_mb": extra_unit_mb(levels, "pss_idle_mb")}


def run(settings: ServerSettings, config: StartupConfig,
        ) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(summary, samples, config as recorded, environment) of a startup run."""
    require_psutil()  # before minutes of model loading, not after
    if not config.units or min(config.units) < 1 or config.repeat < 1:
        raise ValueError(f"bench startup needs unit counts >= 1 and repeat >= 1: {config}")
    questions = audio.load_questions(config.questions_dir)
    samples: list[dict[str, Any]] = []
    env: dict[str, Any] = {}
    for repeat in range(config.repeat):
        for units in sorted(set(config.units)):
            sample, env = measure(settings, units, questions, config)
            log.info("N=%d: ready in %.0f ms, %.0f MiB at ready, %.0f MiB idle after a turn", units,
                     sample["ready_ms"], sample["rss_ready_mb"], sample["rss_idle_mb"])
            samples.append({"repeat": repeat, **sample})
    recorded = {**asdict(config), "units": sorted(set(config.units)),
                "questions_dir": str(config.questions_dir or audio.DEFAULT_QUESTIONS_DIR),
                "questions": [q.name for q in questions],
                "serve": flat_settings(settings, exclude_defaults=True, exclude={"host", "port", "num_pipelines"})}
    return summarize_runs(samples), samples, recorded, env
