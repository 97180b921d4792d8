"""Running one client session for a command (`talk`, `local`): failures as one line, and the exit status."""

from __future__ import annotations

import asyncio
import sys

from speech_to_speech.client.config import RealtimeAudioClientConfig
from speech_to_speech.client.errors import ClientError
from speech_to_speech.client.runner import SessionSummary, listen_and_play_realtime


def run_client(prog: str, config: RealtimeAudioClientConfig) -> int:
    """Run one session to its end; client failures print as one line and exit 1."""
    try:
        summary = asyncio.run(listen_and_play_realtime(config))
    except ClientError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 1
    except ValueError as error:  # a tool module that breaks the contract
        print(f"{prog}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return report_file_session(prog, config, summary)


def report_file_session(prog: str, config: RealtimeAudioClientConfig, summary: SessionSummary) -> int:
    if config.input_wav is None:
        return 0
    answered = [r for r in summary.responses if r.get("status") == "completed"]
    if not summary.responses:
        print(f"{prog}: no answer: no speech was heard in {config.input_wav}", file=sys.stderr)
        return 1
    where = f" to {config.output_wav}" if config.output_wav else ""
    print(f"{len(answered)} answer(s){where}", file=sys.stderr)
    failed = [r for r in summary.responses if r.get("status") == "failed"]
    return 1 if failed else 0
