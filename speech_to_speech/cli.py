"""``speech-to-speech``: serve | talk | local | bench. Thin: parse, then call.

``serve`` and ``local`` take a flag for every ServerSettings field (derived
from the model, see flags.py) and ``--config FILE`` (YAML); flags given on
the command line override the file, which overrides the defaults.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from speech_to_speech import __version__, registry
from speech_to_speech.config import ServerSettings, load_yaml, settings_from_yaml
from speech_to_speech.flags import add_model_flags, given_values

EXIT_USAGE = 2  # also what argparse exits with on a bad flag
BACKEND_FIELDS: tuple[registry.Kind, ...] = ("vad", "stt", "llm", "tts")
# Subcommands that other issues fill in; until then they say so and fail.
PENDING: dict[str, tuple[str, int]] = {
    "talk": ("connect to a server with the microphone and speaker", 5),
    "bench": ("latency, barge-in, overhead and capacity benchmarks", 6),
}


def _settings_parent() -> tuple[argparse.ArgumentParser, list[str]]:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--config", type=Path, metavar="FILE", help="YAML settings (flags override them).")
    group = parent.add_argument_group("server settings")
    extra: dict[str, str] = {kind: f"One of: {', '.join(registry.names(kind))}." for kind in BACKEND_FIELDS}
    fields = add_model_flags(group, ServerSettings, extra_help=extra)
    return parent, fields


def build_parser() -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser, and the ServerSettings fields it has flags for."""
    parser = argparse.ArgumentParser(
        prog="speech-to-speech",
        description="Local-first voice-agent server for OpenAI Realtime clients (VAD -> STT -> LLM -> TTS).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    settings, fields = _settings_parent()
    commands.add_parser("serve", parents=[settings], help="Serve the Realtime API (WebSocket) over the local pipeline.")
    local = commands.add_parser(
        "local", parents=[settings], help="Run the pipeline in this process; --input-wav for file mode."
    )
    local.add_argument("--input-wav", "--input_wav", type=Path, help="WAV of the user's speech (any rate).")
    local.add_argument("--output-wav", "--output_wav", type=Path, help="Where to write the answers (24 kHz).")
    local.add_argument(
        "--realtime", action="store_true", help="Push the input at real-time pace (default: as fast as it goes)."
    )
    local.add_argument(
        "--trailing-silence-s",
        "--trailing_silence_s",
        type=float,
        default=1.5,
        help="Silence appended to the input so the VAD ends the last turn (default: 1.5).",
    )
    for name, (what, issue) in PENDING.items():
        commands.add_parser(name, help=f"{what.capitalize()} (not implemented yet, issue {issue}).")
    return parser, fields


def settings_from_args(args: argparse.Namespace, fields: list[str]) -> ServerSettings:
    """Defaults, then the YAML file, then the flags given. Raises ValueError on bad settings."""
    values: dict[str, Any] = {}
    if args.config is not None:
        values.update(settings_from_yaml(load_yaml(args.config)))
    values.update(given_values(args, fields))
    try:
        settings = ServerSettings(**values)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in error.errors())
        raise ValueError(problems) from None
    for kind in BACKEND_FIELDS:
        name = getattr(settings, kind)
        if name not in registry.names(kind):
            raise ValueError(f"unknown {kind} backend {name!r}; choose one of {', '.join(registry.names(kind))}")
    return settings


def _serve(settings: ServerSettings, args: argparse.Namespace) -> int:
    # Imported here: the server pulls in FastAPI/uvicorn, which no other command needs.
    from speech_to_speech.realtime import server

    server.run(settings)
    return 0


def _local(settings: ServerSettings, args: argparse.Namespace) -> int:
    if args.input_wav is None:
        print(
            "speech-to-speech local: microphone/speaker mode is not implemented yet (see issue 5); "
            "use --input-wav FILE --output-wav FILE",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.output_wav is None:
        print("speech-to-speech local: --input-wav needs --output-wav", file=sys.stderr)
        return EXIT_USAGE
    from speech_to_speech.local_file import run_file

    def report(who: str, text: str) -> None:
        print(f"{who}: {text}", file=sys.stderr if who == "error" else sys.stdout, flush=True)

    turns = run_file(
        settings,
        args.input_wav,
        args.output_wav,
        report,
        realtime=args.realtime,
        trailing_silence_s=args.trailing_silence_s,
    )
    if not turns:
        print(f"speech-to-speech local: no speech found in {args.input_wav}", file=sys.stderr)
        return 1
    failed = [t for t in turns if t.status == "failed"]
    print(f"wrote {len(turns)} answer(s) to {args.output_wav}", file=sys.stderr)
    return 1 if failed else 0


COMMANDS: dict[str, Callable[[ServerSettings, argparse.Namespace], int]] = {"serve": _serve, "local": _local}


def main(argv: list[str] | None = None) -> int:
    parser, fields = build_parser()
    # Known args only: a pending command must say it is pending whatever flags it gets.
    args, unknown = parser.parse_known_args(argv)
    if args.command in PENDING:
        what, issue = PENDING[args.command]
        print(f"speech-to-speech {args.command}: not implemented yet (see issue {issue}: {what})", file=sys.stderr)
        return EXIT_USAGE
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        settings = settings_from_args(args, fields)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return COMMANDS[args.command](settings, args)


if __name__ == "__main__":
    sys.exit(main())
