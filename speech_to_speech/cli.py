"""``speech-to-speech``: serve | talk | local | bench. Thin: parse, then call.

``serve``, ``local`` and the ``bench`` benchmarks take a flag for every
ServerSettings field, by its flat name (derived from the sections, see flags.py and settings/), ``--preset``
(presets.py) and ``--config FILE`` (YAML); flags given on the command line
override the file, which overrides the preset, which overrides the defaults
(a benchmark's own defaults first: see bench/cli_benches.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from speech_to_speech import __version__, registry
from speech_to_speech.bench.cli import add_bench_parser, run_bench
from speech_to_speech.client.cli import LOCAL_EXCLUDED, add_client_flags
from speech_to_speech.config import (
    SECTIONS,
    TEST_ONLY_FIELDS,
    ServerSettings,
    flat_location,
    load_yaml,
    settings_from_flat,
    settings_from_yaml,
)
from speech_to_speech.flags import add_model_flags, given_values
from speech_to_speech.presets import DEFAULT_PRESET, PRESETS, preset

EXIT_USAGE = 2  # also what argparse exits with on a bad flag
BACKEND_FIELDS: tuple[registry.Kind, ...] = ("vad", "stt", "llm", "tts")
# What a user runs gets the default preset; benchmarks measure the settings they are given.
PRESET_BY_DEFAULT = ("serve", "local")
# `local` has one user, its own client: one unit unless a flag or the file asks for more.
LOCAL_DEFAULTS: dict[str, Any] = {"num_pipelines": 1}
# The heading of each section's flags in --help (the flags keep their flat names: --stt_model, --thresh).
SECTION_HELP: dict[str, str] = {
    "server": "The process: address, pool of units, access control, shutdown, session store.",
    "limits": "What one session may send, keep and wait for, and its resume journal.",
    "vad": "What hears the user: the VAD backend and its thresholds.",
    "turns": "What ends a turn: the turn detector, its pauses, take-back, work started during the turn.",
    "stt": "Speech to text.",
    "llm": "The language model: its backend, prompt and sampling.",
    "tts": "Text to speech, and the viseme stage after it.",
    "tools": "MCP servers every session may use (stdio), and how long MCP listings and calls may take.",
    "testing": "The scripted backends (tests, benchmarks).",
}


def _settings_parent(*, test_only: bool) -> tuple[argparse.ArgumentParser, list[str]]:
    """The settings flags; without ``test_only``, the scripted handlers' flags parse but are not listed."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--config", type=Path, metavar="FILE", help="YAML settings (flags override them).")
    parent.add_argument("--preset", choices=tuple(PRESETS), default=None,
                        help="A whole stack chosen by measurement, under --config and the flags: fast (SmolLM2-135M) "
                             f"or quality (Qwen2.5-Coder-0.5B); see docs/models.md. serve and local take "
                             f"{DEFAULT_PRESET} unless --preset or --config is given; benchmarks take none.")
    extra: dict[str, str] = {kind: f"One of: {', '.join(registry.names(kind))}; or a module:Class."
                             for kind in BACKEND_FIELDS}
    fields: list[str] = []
    for section, model in SECTIONS.items():
        if section == "testing" and not test_only:  # parsed, but neither listed nor given a heading
            fields += add_model_flags(parent, model, unlisted=TEST_ONLY_FIELDS)
            continue
        group = parent.add_argument_group(f"{section} settings", SECTION_HELP[section])
        fields += add_model_flags(group, model, extra_help=extra)
    return parent, fields


def build_parser() -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser, and the flat names of the settings it has flags for."""
    parser = argparse.ArgumentParser(
        prog="speech-to-speech",
        description="Local-first voice-agent server for OpenAI Realtime clients (VAD -> STT -> LLM -> TTS).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    settings, fields = _settings_parent(test_only=False)
    commands.add_parser("serve", parents=[settings], help="Serve the Realtime API (WebSocket) over the local pipeline.",
                        epilog="The scripted handlers' flags (--scripted_*, for tests) are listed by bench --help.")
    local = commands.add_parser(
        "local", parents=[settings], help="The server and the talk client in one process (loopback WebSocket)."
    )
    add_client_flags(local, exclude=LOCAL_EXCLUDED)
    local.set_defaults(settings_base=LOCAL_DEFAULTS)
    talk = commands.add_parser("talk", help="Talk to a Realtime server with the microphone and speaker.")
    talk.add_argument("--config", type=Path, metavar="FILE", help="YAML: the runtime.client section.")
    add_client_flags(talk)
    add_bench_parser(commands, _settings_parent(test_only=True)[0])
    return parser, fields


def settings_from_args(args: argparse.Namespace, fields: list[str]) -> ServerSettings:
    """Defaults (a command's own first), the preset, the YAML file, then the flags given. Raises ValueError."""
    values: dict[str, Any] = dict(getattr(args, "settings_base", None) or {})
    chosen = getattr(args, "preset", None)
    if chosen is None and args.command in PRESET_BY_DEFAULT and args.config is None:
        chosen = DEFAULT_PRESET  # a config file describes a whole stack of its own
    if chosen:
        values.update(preset(chosen))
    if args.config is not None:
        values.update(settings_from_yaml(load_yaml(args.config)))
    values.update(given_values(args, fields))
    try:
        settings = settings_from_flat(values)
    except ValidationError as error:
        problems = "; ".join(f"{flat_location(e['loc']) or 'settings'}: {e['msg']}" for e in error.errors())
        raise ValueError(problems) from None
    for kind in BACKEND_FIELDS:
        name = getattr(settings, kind).backend
        if not registry.known(kind, name):
            raise ValueError(f"unknown {kind} backend {name!r}; choose one of {', '.join(registry.names(kind))}, "
                             "or a module:Class")
    return settings


def _serve(settings: ServerSettings, args: argparse.Namespace) -> int:
    # Imported here: the server pulls in FastAPI/uvicorn, which no other command needs.
    from speech_to_speech.realtime.app import server
    from speech_to_speech.realtime.app.exposure import exposure_problem, with_env_api_key

    settings = with_env_api_key(settings)
    problem = exposure_problem(settings)
    if problem is not None:
        print(f"speech-to-speech serve: {problem}", file=sys.stderr)
        return EXIT_USAGE
    server.run(settings)
    return 0


def _local(settings: ServerSettings, args: argparse.Namespace) -> int:
    from speech_to_speech.client.cli import run_local

    return run_local(settings, args)


def _talk(settings: ServerSettings, args: argparse.Namespace) -> int:
    from speech_to_speech.client.cli import run_talk

    return run_talk(args)


COMMANDS: dict[str, Callable[[ServerSettings, argparse.Namespace], int]] = {
    "serve": _serve,
    "local": _local,
    "talk": _talk,
    "bench": run_bench,
}


def main(argv: list[str] | None = None) -> int:
    parser, fields = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.command == "bench" and args.bench == "report":
        args.config = None  # the report reads result files, not server settings
    try:
        settings = settings_from_args(args, fields)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    logging.basicConfig(level=settings.server.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return COMMANDS[args.command](settings, args)


if __name__ == "__main__":
    # Too late here to size the runtimes' thread pools (this module imported them): start again through the
    # command's own entry point, which does it first (launch.py). Run as it was, `serve` answered a
    # barge-in ~80 ms later (bench bargein, 2-core Xeon).
    os.execv(sys.executable, [sys.executable, "-m", "speech_to_speech", *sys.argv[1:]])
