"""``bench resume`` from the flags: its own child server (a long scripted answer), the run, the JSON file."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import asdict
from pathlib import Path
from typing import Any

from speech_to_speech.client.reconnect import ReconnectPolicy
from speech_to_speech.config import ServerSettings


def run_resume(settings: ServerSettings, args: argparse.Namespace, output: Path) -> int:
    """Run the resume benchmark on a child server for ``settings``; 0 when every resume gave the whole answer."""
    from speech_to_speech.bench import results
    from speech_to_speech.bench.report import print_summary
    from speech_to_speech.bench.resume import REPLY, ResumeConfig, run
    from speech_to_speech.bench.target import started

    if settings.llm.backend == "scripted" and not settings.testing.replies:
        settings = settings.updated(scripted_replies=[REPLY])
    extra: dict[str, Any] = {"timeout_s": args.timeout} if args.timeout else {}
    if args.reconnect_delay_ms is not None:
        delay = args.reconnect_delay_ms / 1000
        extra["reconnect"] = asdict(ReconnectPolicy(initial_delay_s=delay, max_delay_s=max(delay, 4.0)))
    config = ResumeConfig(sessions=args.sessions, seed=args.seed, **extra)
    with started(settings) as (server, _child):
        summary, samples, recorded = asyncio.run(run(server, config))
        env = results.environment(server)
    result = results.write(output, "resume", target=None, env=env, config=recorded, summary=summary, samples=samples)
    print_summary(result)
    print(f"wrote {output}")
    clean = summary["events_lost"] == 0 and summary["duplicates_seen_by_consumer"] == 0
    return 0 if clean and summary["resumes_succeeded"] == summary["resumes_attempted"] else 1
