"""The ``speech-to-speech bench`` parser: a subcommand per benchmark and its flags."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from speech_to_speech.bench.cli_benches import BENCHES, QUIET, RESUME_SERVER, SOAK_SERVER, SPOKEN


def _counts(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.replace(",", " ").split())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,2,4: {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive counts: {text!r}")
    return values


def _names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names")
    return names


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number: {text!r}")
    return value


def _phases(text: str) -> tuple[str, ...]:
    from speech_to_speech.bench.load import parse_phases

    try:
        return parse_phases(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_turn_flags(parser: argparse.ArgumentParser) -> None:
    """What the spoken-turn corpus benches (turns, load) say and how they listen."""
    parser.add_argument("--turns", type=_positive, default=None, help="Say the first N requests only.")
    parser.add_argument("--repeat", type=_positive, default=1, help="Times to say every request (default 1).")
    parser.add_argument("--warmup", type=int, default=1, help="Uncounted requests first (default 1).")
    parser.add_argument("--chunk-ms", type=_positive, default=20, help="Microphone chunk (default 20 ms).")
    parser.add_argument("--settle-s", type=float, default=1.5,
                        help="A turn is over after this long with no response open and nothing read (default "
                             "1.5 s): a second answer in that time is seen.")
    said = parser.add_mutually_exclusive_group()
    said.add_argument("--corpus", type=Path, default=None, help="The requests (default: the packaged corpus).")
    said.add_argument("--clips-dir", type=Path, default=None,
                      help="Say the WAVs of this folder instead of the corpus (words from its README table).")


def _add_conversation_flags(parser: argparse.ArgumentParser) -> None:
    """What bench conversation says and how its user listens."""
    parser.add_argument("--corpus", type=Path, default=None,
                        help="The conversations (default: the packaged ones).")
    parser.add_argument("--conversations", type=_positive, default=None, help="Say the first N conversations only.")
    parser.add_argument("--turns", type=_positive, default=None, help="Say the first N turns of each only.")
    parser.add_argument("--warmup", type=int, default=1,
                        help="Turns of the first conversation said first in a session of their own, not counted "
                             "(default 1).")
    parser.add_argument("--chunk-ms", type=_positive, default=20, help="Microphone chunk (default 20 ms).")
    parser.add_argument("--gap-s", type=float, default=0.6,
                        help="The user's pause after an answer has played out, before the next turn "
                             "(default 0.6 s).")
    parser.add_argument("--settle-s", type=float, default=1.5,
                        help="A turn with no answer is over after this long with nothing open and nothing read "
                             "(default 1.5 s).")


def add_bench_parser(commands: argparse._SubParsersAction, settings: argparse.ArgumentParser) -> None:
    """``bench``: a subcommand per benchmark, each given the server's flags (``settings``) and its own."""
    bench = commands.add_parser("bench", help="Benchmarks: latency, turns, load, conversation, quality, bargein, "
                                              "echo, room, languages, tools, overhead, capacity, startup, soak, "
                                              "resume; and their report.")
    kinds = bench.add_subparsers(dest="bench", required=True)
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("--output", type=Path, help="The JSON file (default: docs/benchmarks/<benchmark>.json).")
    output.add_argument("--timeout", type=float, default=None, help="Seconds to wait for any one answer.")
    common = argparse.ArgumentParser(add_help=False, parents=[output])
    common.add_argument("--url", help="A running server (ws://host:port/v1/realtime); default: start one here.")
    common.add_argument("--server", choices=("subprocess", "in-process"), default="subprocess",
                        help="How to run the server without --url (default: a child process, so the clients "
                             "here do not share its GIL).")
    questions = argparse.ArgumentParser(add_help=False)
    questions.add_argument("--questions-dir", type=Path, default=None,
                           help="The spoken questions (default ../shared/audio/questions; synthesised if missing).")
    questions.add_argument("--questions", type=int, default=None, help="Use the first N questions only.")
    questions.add_argument("--repeat", type=int, default=None, help="Times to ask every question.")
    for name, spec in BENCHES.items():
        parser = kinds.add_parser(name, help=spec.help,
                                  parents=[settings, common, *([questions] if name in SPOKEN else [])])
        _OWN_FLAGS[name](parser)
        parser.set_defaults(settings_base=spec.defaults)
    _add_startup(kinds, settings, output)
    _add_soak(kinds, settings, output)
    _add_resume(kinds, settings, output)
    _add_report(kinds)


def _add_latency_flags(parser: argparse.ArgumentParser) -> None:
    """How bench latency's microphone speaks."""
    parser.add_argument("--warmup", type=int, default=1, help="Uncounted turns first (default 1).")
    parser.add_argument("--chunk-ms", type=_positive, default=20,
                        help="Microphone chunk (default 20 ms, as a live microphone sends).")


def _add_bargein_flags(parser: argparse.ArgumentParser) -> None:
    """When bench bargein talks over the answer, and what it listens for after."""
    parser.add_argument("--inject-after-ms", type=float, default=300.0,
                        help="Start talking this long after the answer's first audio (default 300).")
    parser.add_argument("--settle-ms", type=float, default=1000.0,
                        help="Listen this long after the cancellation for stale audio (default 1000).")
    parser.add_argument("--instructions", default=None,
                        help="Session instructions (default: ask for long answers; '' keeps the server's).")
    parser.add_argument("--overlap-policy", default=None, help="The sessions' overlap_policy.")


def _add_echo_flags(parser: argparse.ArgumentParser) -> None:
    """The simulated room of bench echo: its delays, the barge-in, the acks, the load."""
    parser.add_argument("--delays-ms", type=_counts, default=(60, 150, 250),
                        help="Speaker-to-microphone delays of the simulated room (default 60,150,250).")
    parser.add_argument("--barge-in-after-ms", type=float, default=300.0,
                        help="Talk over the answer this long after its first audio (default 300).")
    parser.add_argument("--instructions", default=None,
                        help="Session instructions (default: answers of a few sentences; '' keeps the "
                             "server's).")
    parser.add_argument("--ack-every-ms", type=int, default=100,
                        help="Send playback.ack this often, as the packaged client does (default 100; "
                             "0: never, the server places the echo by its send clock alone).")
    parser.add_argument("--busy-neighbours", type=int, default=0,
                        help="Processes that each keep a core busy beside the server through the echo "
                             "trials (default 0): the echo on a loaded machine.")


def _add_load_flags(parser: argparse.ArgumentParser) -> None:
    """The spoken-turn corpus's flags, and which phases bench load runs."""
    _add_turn_flags(parser)
    parser.add_argument("--phases", type=_phases, default=None,
                        help="Some of alone,busy_neighbour,two_at_once (default all three, run in "
                             "that order).")


def _add_quality_flags(parser: argparse.ArgumentParser) -> None:
    """Which requests bench quality asks, and the tools they may call."""
    parser.add_argument("--set", dest="request_set", default=None,
                        help="The requests: a set file, or a packaged set by name: quality (the default) or "
                             "everyday (everyday questions held out from the quality set).")
    parser.add_argument("--requests", type=_positive, default=None, help="Ask the first N requests only.")
    parser.add_argument("--tool-module", default=None,
                        help="Tools the tool requests may call (default speech_to_speech.bench.quality_tools).")
    parser.add_argument("--warmup", type=int, default=1, help="Uncounted requests first (default 1).")


def _add_languages_flags(parser: argparse.ArgumentParser) -> None:
    """Which languages, requests and session modes bench languages tries."""
    parser.add_argument("--languages", type=_names, default=None, help="Some of fr,es,de,ja (default all four).")
    parser.add_argument("--requests", type=_positive, default=None,
                        help="The first N requests of each language only (default all three).")
    parser.add_argument("--modes", type=_names, default=None,
                        help="auto (no session language), session (the session's language set), or both "
                             "(default auto,session).")
    parser.add_argument("--repeat", type=_positive, default=None, help="Times to ask every request (default 1).")


def _add_overhead_flags(parser: argparse.ArgumentParser) -> None:
    """How many turns bench overhead times."""
    parser.add_argument("--turns", type=int, default=30, help="Turns to time (default 30).")


def _add_capacity_flags(parser: argparse.ArgumentParser) -> None:
    """The session counts bench capacity tries, and what each session says."""
    parser.add_argument("--sessions", type=_counts, default=(1, 2, 4, 8, 16, 32, 48),
                        help="Concurrent session counts (default 1,2,4,8,16,32,48).")
    parser.add_argument("--turns", type=int, default=3, help="Turns per session (default 3).")
    parser.add_argument("--budget-ms", type=float, default=50.0, help="p95 added-latency budget (default 50).")
    parser.add_argument("--stagger-s", type=float, default=1.0, help="Session starts spread over (default 1 s).")
    parser.add_argument("--speech", choices=("tone", "questions", "corpus"), default="tone",
                        help="What each session says: a tone (scripted VAD), or for real models the spoken "
                             "questions or bench turns' corpus of natural requests; each turn another one.")
    parser.add_argument("--questions-dir", default=None, help="With --speech questions: the WAVs.")
    parser.add_argument("--ends", choices=("spread", "together"), default="spread",
                        help="spread: starts over --stagger-s; together: before every turn the sessions wait "
                             "for each other and speak so that their speech ends at the same instant.")


def _add_room_flags(parser: argparse.ArgumentParser) -> None:
    from speech_to_speech.bench.room_flags import add_room_flags

    add_room_flags(parser)


def _add_tools_flags(parser: argparse.ArgumentParser) -> None:
    from speech_to_speech.bench.tools_flags import add_tools_flags

    add_tools_flags(parser)


# Each server benchmark's own flags, beside the server's and the common ones.
_OWN_FLAGS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "latency": _add_latency_flags, "turns": _add_turn_flags, "load": _add_load_flags,
    "conversation": _add_conversation_flags, "quality": _add_quality_flags, "bargein": _add_bargein_flags,
    "echo": _add_echo_flags, "room": _add_room_flags, "languages": _add_languages_flags,
    "tools": _add_tools_flags, "overhead": _add_overhead_flags, "capacity": _add_capacity_flags,
}


def _add_startup(kinds: argparse._SubParsersAction, settings: argparse.ArgumentParser,
                 output: argparse.ArgumentParser) -> None:
    startup = kinds.add_parser("startup", parents=[settings, output],
                               help="Time to ready and memory (at ready, idle after a turn) of `serve` with N "
                                    "pipeline units (real models by default).")
    startup.add_argument("--units", type=_counts, default=(1, 2, 4),
                         help="Pipeline unit counts (--num_pipelines) to start the server with (default 1,2,4).")
    startup.add_argument("--repeat", type=_positive, default=3, help="Server starts per unit count (default 3).")
    startup.add_argument("--settle-s", type=float, default=2.0,
                         help="Wait after ready, and after the turns, before reading memory (default 2 s).")
    startup.add_argument("--questions-dir", type=Path, default=None,
                         help="The spoken questions (default ../shared/audio/questions; synthesised if missing).")
    startup.set_defaults(settings_base=QUIET)


def _add_soak(kinds: argparse._SubParsersAction, settings: argparse.ArgumentParser,
              output: argparse.ArgumentParser) -> None:
    soak = kinds.add_parser("soak", parents=[settings, output],
                            help="N sessions x M turns (scripted) with malformed events and random disconnects: "
                                 "errors answered, and the server's threads, fds and RSS before and after.")
    soak.add_argument("--sessions", type=_positive, default=200, help="Sessions in all (default 200).")
    soak.add_argument("--turns", type=_positive, default=3, help="Spoken turns per session (default 3).")
    soak.add_argument("--concurrency", type=_positive, default=4,
                      help="Sessions at a time, and pipeline units of the server (default 4).")
    soak.add_argument("--disconnect-share", type=float, default=0.1,
                      help="Share of sessions that vanish mid-turn (default 0.1).")
    soak.add_argument("--malformed-share", type=float, default=0.3,
                      help="Share of turns preceded by a malformed event (default 0.3).")
    soak.add_argument("--seed", type=int, default=1, help="Random seed (default 1).")
    soak.set_defaults(settings_base=SOAK_SERVER)


def _add_resume(kinds: argparse._SubParsersAction, settings: argparse.ArgumentParser,
                output: argparse.ArgumentParser) -> None:
    resume = kinds.add_parser("resume", parents=[settings, output],
                              help="N sessions (scripted) cut mid-answer and resumed by RealtimeClient: resumes, "
                                   "cut -> resumed, events replayed, duplicates and losses; the emit rate.")
    resume.add_argument("--sessions", type=_positive, default=30, help="Sessions, each cut once (default 30).")
    resume.add_argument("--seed", type=int, default=1, help="Random seed of the cut points (default 1).")
    resume.add_argument("--reconnect-delay-ms", type=float, default=None,
                        help="The client's first reconnect wait (default: RealtimeClient's own, 250 ms jittered "
                             "down to half; 0: reconnect at once, leaving the server's resume alone in the figure).")
    resume.add_argument("--failover", action="store_true",
                        help="Two replicas on a redis-server of their own (redis-server on PATH): each session's "
                             "replica is killed (SIGKILL) mid-answer and the session resumed on the other.")
    resume.add_argument("--death-ms", type=float, default=None,
                        help="With --failover: the replica takes this long to die (frozen, then SIGKILL), and the "
                             "client is cut and resumes on the other at once, as by hand (default: plain SIGKILL).")
    resume.set_defaults(settings_base=RESUME_SERVER)


def _add_report(kinds: argparse._SubParsersAction) -> None:
    report = kinds.add_parser("report", help="The plot and the README table from the JSON files.")
    report.add_argument("--input-dir", type=Path, default=Path("docs/benchmarks"), help="Where the JSON files are.")
    report.add_argument("--plot", type=Path, default=None, help="The PNG (default: <input-dir>/benchmarks.png).")
    report.add_argument("--readme", type=Path, default=Path("docs/benchmarks/README.md"),
                        help="Write the table between its bench markers (default docs/benchmarks/README.md).")
    report.add_argument("--no-readme", dest="readme", action="store_const", const=None, help="Print the table only.")
