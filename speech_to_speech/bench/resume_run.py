"""``bench resume`` from the flags: its own child server (a long scripted answer), the run, the JSON file;
with ``--failover``, two replicas on a redis-server of its own."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from speech_to_speech.client.reconnect import ReconnectPolicy
from speech_to_speech.config import ServerSettings, flat_settings

# The failover's scripted answer is paced (as a model's would be), so a kill lands in its middle.
FAILOVER_TOKEN_DELAY_MS = 20.0


def _client_options(args: argparse.Namespace) -> dict[str, Any]:
    extra: dict[str, Any] = {"timeout_s": args.timeout} if args.timeout else {}
    if args.reconnect_delay_ms is not None:
        delay = args.reconnect_delay_ms / 1000
        extra["reconnect"] = asdict(ReconnectPolicy(initial_delay_s=delay, max_delay_s=max(delay, 4.0)))
    return extra


def run_resume(settings: ServerSettings, args: argparse.Namespace, output: Path) -> int:
    """Run the resume benchmark on a child server for ``settings``; 0 when every resume gave the whole answer."""
    from speech_to_speech.bench import results
    from speech_to_speech.bench.report import print_summary
    from speech_to_speech.bench.resume import REPLY, ResumeConfig, run
    from speech_to_speech.bench.target import started

    if args.failover:
        return run_failover(settings, args, output)
    if settings.llm.backend == "scripted" and not settings.testing.replies:
        settings = settings.updated(scripted_replies=[REPLY])
    config = ResumeConfig(sessions=args.sessions, seed=args.seed, **_client_options(args))
    with started(settings) as (server, _child):
        summary, samples, recorded = asyncio.run(run(server, config))
        env = results.environment(server)
    result = results.write(output, "resume", target=None, env=env, config=recorded, summary=summary, samples=samples)
    print_summary(result)
    print(f"wrote {output}")
    clean = summary["events_lost"] == 0 and summary["duplicates_seen_by_consumer"] == 0
    return 0 if clean and summary["resumes_succeeded"] == summary["resumes_attempted"] else 1


@contextlib.contextmanager
def _replicas(settings: ServerSettings) -> Iterator[tuple[tuple[Any, Any], Any]]:
    """A redis-server and two ``serve`` processes of ``settings`` sharing it, until the block ends."""
    from speech_to_speech.testing.redis_server import INSTALL_HINT, RedisServer, find_redis_server
    from speech_to_speech.testing.serve_process import ServeProcess

    binary = find_redis_server()
    if binary is None:
        raise RuntimeError(f"bench resume --failover needs redis-server on PATH ({INSTALL_HINT})")
    redis = RedisServer(binary)
    redis.start()
    with tempfile.TemporaryDirectory(prefix="s2s-failover-") as folder:
        config = Path(folder) / "server.yaml"
        flat = flat_settings(settings.updated(session_store=redis.url), exclude_defaults=True)
        config.write_text(yaml.safe_dump({"server": flat}))
        replicas = (ServeProcess("--config", str(config), base=()), ServeProcess("--config", str(config), base=()))
        try:
            for replica in replicas:
                replica.start()
            yield replicas, redis
        finally:
            for replica in replicas:
                replica.stop()
            redis.stop()


def run_failover(settings: ServerSettings, args: argparse.Namespace, output: Path) -> int:
    """``bench resume --failover``: 0 when every session resumed on the other replica, nothing lost or doubled."""
    from speech_to_speech.bench import results
    from speech_to_speech.bench.failover import REPLY, FailoverConfig, run
    from speech_to_speech.bench.report import print_summary
    from speech_to_speech.bench.target import Target

    if settings.llm.backend == "scripted":
        update: dict[str, Any] = {"num_pipelines": 2} if settings.server.num_pipelines == "auto" else {}
        if not settings.testing.replies:
            update["scripted_replies"] = [REPLY]
        if not settings.testing.token_delay_ms:
            update["scripted_token_delay_ms"] = FAILOVER_TOKEN_DELAY_MS
        settings = settings.updated(**update)
    config = FailoverConfig(sessions=args.sessions, seed=args.seed, death_ms=args.death_ms, **_client_options(args))
    try:
        with _replicas(settings) as (replicas, redis):
            summary, samples, recorded = asyncio.run(run(replicas, redis, config))
            env = results.environment(Target(replicas[0].ws_url, replicas[0].http_url, settings, "subprocess"))
    except RuntimeError as error:
        print(f"bench resume --failover: {error}", file=sys.stderr)
        return 1
    result = results.write(output, "failover", target=None, env=env, config=recorded, summary=summary,
                           samples=samples)
    print_summary(result)
    print(f"wrote {output}")
    clean = summary["events_lost"] == summary["duplicates_seen_by_consumer"] == summary["responses_ended_twice"] == 0
    whole = summary["follow_ups_holding_every_earlier_turn"] == summary["sessions"]
    return 0 if clean and whole and summary["resumed_on_the_other_replica"] == summary["sessions"] else 1
