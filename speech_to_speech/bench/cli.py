"""``speech-to-speech bench <benchmark>`` and ``bench report``: run the benchmark the flags chose, write its JSON.

The conversation benchmarks take ``--url`` (a running server) or start one
from the ``serve`` flags, over per-benchmark defaults (bench/cli_benches.py): overhead and capacity
default to the scripted backends, latency, turns, load, conversation, quality
and bargein to the real default models (``load`` lives in its own module, which says
why). ``startup`` starts its own servers (the real default models unless the
flags say otherwise), one per measurement; ``soak`` one child server with
scripted backends, whose threads, fds and RSS it reads. The flags are in
bench/cli_flags.py, the configs they make in bench/cli_config.py.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from speech_to_speech.bench.cli_config import bench_config
from speech_to_speech.bench.cli_flags import add_bench_parser
from speech_to_speech.config import ServerSettings

__all__ = ["add_bench_parser", "run_bench", "server_settings"]

Runner = Callable[[Any, Any], Coroutine[Any, Any, tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]]]


def _runner(name: str) -> Runner:
    from speech_to_speech.bench import (
        bargein,
        capacity,
        conversation,
        echo,
        languages,
        latency,
        load,
        overhead,
        quality,
        room,
        tools,
        turns,
    )

    runners: dict[str, Runner] = {"latency": latency.run, "turns": turns.run, "load": load.run,
                                  "conversation": conversation.run, "languages": languages.run,
                                  "quality": quality.run, "bargein": bargein.run, "overhead": overhead.run,
                                  "capacity": capacity.run, "echo": echo.run, "room": room.run,
                                  "tools": tools.run}
    return runners[name]


def server_settings(name: str, args: argparse.Namespace, settings: ServerSettings) -> ServerSettings:
    """What the bench's own server needs beyond the flags: a unit per session, an answer long enough to interrupt."""
    update: dict[str, Any] = {}
    units = settings.server.num_pipelines  # "auto": sized for the machine, maybe fewer than asked
    if name == "capacity" and (units == "auto" or units < max(args.sessions)):
        update["num_pipelines"] = max(args.sessions)
    if name == "load" and (units == "auto" or units < 2):
        from speech_to_speech.bench.load import PHASES, TWO

        if TWO in (args.phases or PHASES):
            update["num_pipelines"] = 2  # two sessions speaking at once
    if name == "echo" and (units == "auto" or units < 4):
        update["num_pipelines"] = 4  # the four sessions at once
    if name == "bargein" and settings.llm.backend == "scripted" and not settings.testing.replies:
        from speech_to_speech.bench.bargein import SCRIPTED_REPLY

        update["scripted_replies"] = [SCRIPTED_REPLY]
    return settings.updated(**update) if update else settings


def run_bench(settings: ServerSettings, args: argparse.Namespace) -> int:
    name = args.bench
    if name == "report":
        from speech_to_speech.bench.report import run_report

        return run_report(args.input_dir, args.plot, args.readme)
    from speech_to_speech.bench import results
    from speech_to_speech.bench.report import print_summary
    from speech_to_speech.bench.target import target

    output = args.output or results.default_output("failover" if getattr(args, "failover", False) else name)
    if name == "soak":
        return _run_soak(settings, args, output)
    if name == "resume":
        from speech_to_speech.bench.resume_run import run_resume

        return run_resume(settings, args, output)
    if name == "tools" and args.model_only:
        from speech_to_speech.bench.tools_flags import run_model_only

        return run_model_only(settings, args, output)
    config = bench_config(name, args, settings)
    if name == "startup":
        from speech_to_speech.bench import startup

        try:
            summary, samples, recorded, env = startup.run(settings, config)
        except (RuntimeError, ValueError) as error:
            print(f"bench startup: {error}", file=sys.stderr)
            return 1
        result = results.write(output, name, target=None, env=env, config=recorded, summary=summary,
                               samples=samples)
    else:
        with target(args.url, server_settings(name, args, settings), args.server) as server:
            try:
                summary, samples, recorded = asyncio.run(_runner(name)(server, config))
            except ValueError as error:  # what the flags asked for cannot be run (no clips, too few units)
                print(f"bench {name}: {error}", file=sys.stderr)
                return 1
            result = results.write(output, name, target=server, config=recorded, summary=summary, samples=samples)
    print_summary(result)
    logging.getLogger(__name__).info("wrote %s", output)
    print(f"wrote {output}")
    return 0


def _run_soak(settings: ServerSettings, args: argparse.Namespace, output: Path) -> int:
    from speech_to_speech.bench import results, soak
    from speech_to_speech.bench.report import print_summary
    from speech_to_speech.bench.target import started

    config = soak.SoakConfig(sessions=args.sessions, turns=args.turns, concurrency=args.concurrency,
                             disconnect_share=args.disconnect_share, malformed_share=args.malformed_share,
                             seed=args.seed, **({"timeout_s": args.timeout} if args.timeout else {}))
    with started(settings.updated(num_pipelines=args.concurrency)) as (server, child):
        summary, samples, recorded = asyncio.run(soak.run(server, config, child.process.pid))
        env = results.environment(server)
    summary["server_exit_code"] = child.process.returncode  # after SIGTERM
    result = results.write(output, "soak", target=None, env=env, config=recorded, summary=summary, samples=samples)
    print_summary(result)
    print(f"wrote {output}")
    return 0 if summary["failed"] == 0 and summary["errors_missing"] == 0 else 1
