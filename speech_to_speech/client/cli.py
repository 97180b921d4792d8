"""The client half of the command line: `talk` flags, `--list-devices`, and running a session.

Every RealtimeAudioClientConfig field a flag can express becomes ``--field-name``;
the same keys work under ``runtime.client`` in a YAML ``--config`` (flags win).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pydantic import ValidationError

from speech_to_speech.client.command_run import run_client
from speech_to_speech.client.config import RealtimeAudioClientConfig, client_section
from speech_to_speech.client.errors import ClientError
from speech_to_speech.config import ServerSettings, load_yaml
from speech_to_speech.flags import add_model_flags, given_values

EXIT_USAGE = 2

# Flags `local` does not take: the URL is that of its own in-process server.
LOCAL_EXCLUDED = ("url",)
# Python-API settings: with --tool-module, the module's CREATE_RESPONSE is the default.
PYTHON_ONLY = ("tool_response_create",)


def add_client_flags(parser: argparse.ArgumentParser, *, exclude: tuple[str, ...] = ()) -> list[str]:
    """Add the client flags (and --list-devices); returns the config fields that have one.

    The fields are also stored as the parser's ``client_fields`` default, for ``run_talk``/``run_local``.
    """
    group = parser.add_argument_group("client settings (also `runtime.client` in --config)")
    fields = add_model_flags(group, RealtimeAudioClientConfig, exclude=(*exclude, *PYTHON_ONLY), dashes=True)
    group.add_argument("--list-devices", "--list_devices", action="store_true",
                       help="List the audio devices and exit.")
    parser.set_defaults(client_fields=fields)
    return fields


def run_talk(args: argparse.Namespace) -> int:
    """`speech-to-speech talk`: connect to --url with the microphone and speaker (or WAV files)."""
    name = "speech-to-speech talk"
    if args.list_devices:
        return list_devices_command(name)
    config = _config_or_report(name, args)
    return EXIT_USAGE if config is None else run_client(name, config)


def run_local(settings: ServerSettings, args: argparse.Namespace) -> int:
    """`speech-to-speech local`: the server and this client in one process over loopback."""
    from speech_to_speech.client.local import run_local_session  # here, so that `talk` never loads uvicorn

    name = "speech-to-speech local"
    if args.list_devices:
        return list_devices_command(name)
    config = _config_or_report(name, args)
    return EXIT_USAGE if config is None else run_local_session(name, settings, config)


def _config_or_report(name: str, args: argparse.Namespace) -> RealtimeAudioClientConfig | None:
    """The client config of the flags, or None after a one-line error."""
    try:
        return client_config(args, args.client_fields)
    except (OSError, ValueError) as error:
        print(f"{name}: {error}", file=sys.stderr)
        return None


def client_config(args: argparse.Namespace, fields: list[str], **overrides: Any) -> RealtimeAudioClientConfig:
    """Defaults, then ``runtime.client`` of --config, then the flags given. Raises ValueError."""
    values: dict[str, Any] = {}
    if getattr(args, "config", None) is not None:
        values.update(client_section(load_yaml(args.config)))
    values.update(given_values(args, fields))
    values.update(overrides)
    try:
        return RealtimeAudioClientConfig(**values)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'client'}: {e['msg']}" for e in error.errors())
        raise ValueError(problems) from None


def list_devices_command(prog: str) -> int:
    from speech_to_speech.client.devices import list_devices

    try:
        print(list_devices())
    except ClientError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 1
    return 0
