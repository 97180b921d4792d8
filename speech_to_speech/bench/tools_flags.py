"""``bench tools``' own flags, and its ``--model-only`` run (the LLM in this process, no server)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from speech_to_speech.bench.tools import MODES, ToolsConfig
from speech_to_speech.config import ServerSettings


def add_tools_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", dest="request_set", type=Path, default=None,
                        help="The requests (default: the packaged bench/tools_set.json).")
    parser.add_argument("--requests", type=int, default=None, help="Ask the first N requests only.")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"Which of {', '.join(MODES)} to ask every request in (default both).")
    parser.add_argument("--slow-tool-s", type=float, default=3.0,
                        help="How long the client takes to answer the fetch function tool (default 3 s).")
    parser.add_argument("--model-only", action="store_true",
                        help="The written requests to the LLM alone in this process (no server, no voice): "
                             "tool-call precision and recall only.")


def tools_config(args: argparse.Namespace) -> ToolsConfig:
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    unknown = set(modes) - set(MODES)
    if unknown or not modes:
        raise SystemExit(f"bench tools: unknown modes {sorted(unknown)}; choose from {', '.join(MODES)}")
    config = ToolsConfig(requests=args.requests, modes=modes, slow_tool_s=args.slow_tool_s)
    if args.request_set is not None:
        config = replace(config, request_set=args.request_set)
    if args.timeout:
        config = replace(config, timeout_s=args.timeout)
    return config


def run_model_only(settings: ServerSettings, args: argparse.Namespace, output: Path) -> int:
    from speech_to_speech.bench import results
    from speech_to_speech.bench.report import print_summary
    from speech_to_speech.bench.tool_calls import ModelOnlyConfig
    from speech_to_speech.bench.tool_calls import run_model_only as run

    config = ModelOnlyConfig(**({"request_set": args.request_set} if args.request_set else {}))
    try:
        summary, samples, recorded = run(settings, config)
    except (RuntimeError, ValueError) as error:
        print(f"bench tools: {error}", file=sys.stderr)
        return 1
    env = results.model_environment(settings)
    result = results.write(output, "tools", target=None, env=env, config=recorded, summary=summary, samples=samples)
    print_summary(result)
    print(f"wrote {output}")
    return 0
