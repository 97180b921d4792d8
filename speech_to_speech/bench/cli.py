"""``speech-to-speech bench <benchmark>`` and ``bench report``: flags, run, write.

The conversation benchmarks take ``--url`` (a running server) or start one
from the ``serve`` flags, over per-benchmark defaults: overhead and capacity
default to the scripted backends, latency, turns, load, conversation, quality
and bargein to the real default models (``load`` lives in its own module, which says
why). ``startup`` starts its own servers (the real default models unless the
flags say otherwise), one per measurement; ``soak`` one child server with
scripted backends, whose threads, fds and RSS it reads.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.config import ServerSettings
from speech_to_speech.presets import DEFAULT_PRESET, PRESETS

SCRIPTED = {"vad": "scripted", "stt": "scripted", "llm": "scripted", "tts": "scripted"}
# Model time zero: what is left is the server. No speculation: a speculative reply is held until
# the turn ends on purpose, which would show up as "overhead" on the LLM and TTS hops.
ZERO_DELAYS = {**SCRIPTED, "scripted_stt_delay_ms": 0.0, "scripted_token_delay_ms": 0.0,
               "scripted_tts_ms_per_char": 10.0, "speculation_silence_ms": 0}
# About the default models on this kind of machine: Whisper tiny.en on a short turn, SmolLM2 at
# ~80 tokens/s (int8 on CTranslate2, sharing the CPU), speech at a speaking rate; the handlers
# sleep, so N sessions cost the server, not N models.
REALISTIC_DELAYS = {**SCRIPTED, "scripted_stt_delay_ms": 200.0, "scripted_token_delay_ms": 12.0,
                    "scripted_tts_ms_per_char": 60.0,
                    "scripted_replies": ["Paris is the capital of France. It is known for its art."]}
SPOKEN = ("latency", "bargein", "echo")  # the benchmarks that speak the questions
QUIET = {"log_level": "warning"}  # a session's open and close are not news during a bench
# The soak opens hundreds of sessions a minute from one address, on fast scripted handlers; a session
# whose client vanished waits a second (not 30) for a resume, so the last ones are gone soon after the run.
SOAK_SERVER = {**QUIET, **SCRIPTED, "min_silence_ms": 300, "speech_pad_ms": 100, "scripted_tts_ms_per_char": 5.0,
               "max_sessions_per_minute": 0, "max_sessions_per_client": 0, "disconnect_grace_s": 1.0}

RESUME_SERVER = {**QUIET, **SCRIPTED, "scripted_token_delay_ms": 0.0, "scripted_tts_ms_per_char": 5.0,
                 "max_sessions_per_minute": 0, "max_sessions_per_client": 0}

Runner = Callable[[Any, Any], Coroutine[Any, Any, tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]]]


@dataclass(frozen=True)
class Bench:
    help: str
    defaults: dict[str, Any]  # server settings under the YAML file and the flags


BENCHES = {
    "latency": Bench("End of speech -> first audio delta, with the stage breakdown (real models by default).",
                     QUIET),
    "turns": Bench("Natural spoken requests with pauses: answered, double answers, end of speech -> first "
                   "audio delta (real models by default).", QUIET),
    "load": Bench("The spoken-turn corpus alone, beside a process keeping one core busy, and two sessions "
                  "speaking at once: end of speech -> first audio and its ratio to alone (real models by "
                  "default).", QUIET),
    "conversation": Bench("Scripted conversations of 30+ turns, each spoken in one session, the user hearing "
                          "every answer out: end of speech -> first audio early and late, prompt tokens read per "
                          "turn, recall and accuracy (real models by default).", QUIET),
    "quality": Bench("Spoken requests with checkable answers: accuracy per category, tool-call precision and "
                     "recall, end of speech -> first audio (real models by default).", QUIET),
    "bargein": Bench("Talking over the answer -> response cancelled, and stale audio after it.", QUIET),
    "echo": Bench("A microphone that hears its own speaker, echo cancellation off and on: answers played out, "
                  "self-interruptions, echo turns, barge-in with the echo; ERLE and CPU (real models by default).",
                  QUIET),
    "room": Bench("An assistant in a room: listener words and interruptions over answers, background talk "
                  "nobody addresses it with, requests over the room (real models by default).", QUIET),
    "languages": Bench("Spoken requests in French, Spanish, German and Japanese, each in a fresh session: the "
                       "language heard, error rates, the answer's language and intelligibility, end of speech -> "
                       "first audio (the multilingual preset by default).", {**QUIET, **PRESETS["multilingual"]}),
    "tools": Bench("Spoken requests that need a tool (MCP and function tools the model has not seen): right call "
                   "and arguments, silence from the end of speech to the first audio with and without the "
                   "preamble, time to the spoken result (the default preset by default).",
                   {**QUIET, **PRESETS[DEFAULT_PRESET]}),
    "overhead": Bench("Per-hop server overhead with zero-time scripted handlers.", {**QUIET, **ZERO_DELAYS}),
    "capacity": Bench("Added latency and output underruns of N concurrent sessions (scripted, realistic delays).",
                      {**QUIET, **REALISTIC_DELAYS}),
}


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
    parsers = {
        name: kinds.add_parser(name, help=spec.help,
                               parents=[settings, common, *([questions] if name in SPOKEN else [])])
        for name, spec in BENCHES.items()
    }
    parsers["latency"].add_argument("--warmup", type=int, default=1, help="Uncounted turns first (default 1).")
    parsers["latency"].add_argument("--chunk-ms", type=_positive, default=20,
                                    help="Microphone chunk (default 20 ms, as a live microphone sends).")
    parsers["bargein"].add_argument("--inject-after-ms", type=float, default=300.0,
                                    help="Start talking this long after the answer's first audio (default 300).")
    parsers["bargein"].add_argument("--settle-ms", type=float, default=1000.0,
                                    help="Listen this long after the cancellation for stale audio (default 1000).")
    parsers["bargein"].add_argument("--instructions", default=None,
                                    help="Session instructions (default: ask for long answers; '' keeps the server's).")
    parsers["bargein"].add_argument("--overlap-policy", default=None, help="The sessions' overlap_policy.")
    from speech_to_speech.bench.room_flags import add_room_flags

    add_room_flags(parsers["room"])
    from speech_to_speech.bench.tools_flags import add_tools_flags

    add_tools_flags(parsers["tools"])
    parsers["echo"].add_argument("--delays-ms", type=_counts, default=(60, 150, 250),
                                 help="Speaker-to-microphone delays of the simulated room (default 60,150,250).")
    parsers["echo"].add_argument("--barge-in-after-ms", type=float, default=300.0,
                                 help="Talk over the answer this long after its first audio (default 300).")
    parsers["echo"].add_argument("--instructions", default=None,
                                 help="Session instructions (default: answers of a few sentences; '' keeps the "
                                      "server's).")
    parsers["echo"].add_argument("--ack-every-ms", type=int, default=100,
                                 help="Send playback.ack this often, as the packaged client does (default 100; "
                                      "0: never, the server places the echo by its send clock alone).")
    parsers["echo"].add_argument("--busy-neighbours", type=int, default=0,
                                 help="Processes that each keep a core busy beside the server through the echo "
                                      "trials (default 0): the echo on a loaded machine.")
    _add_turn_flags(parsers["turns"])
    _add_turn_flags(parsers["load"])
    parsers["load"].add_argument("--phases", type=_phases, default=None,
                                 help="Some of alone,busy_neighbour,two_at_once (default all three, run in "
                                      "that order).")
    _add_conversation_flags(parsers["conversation"])
    quality = parsers["quality"]
    quality.add_argument("--set", dest="request_set", default=None,
                         help="The requests: a set file, or a packaged set by name: quality (the default) or "
                              "everyday (everyday questions held out from the quality set).")
    quality.add_argument("--requests", type=_positive, default=None, help="Ask the first N requests only.")
    quality.add_argument("--tool-module", default=None,
                         help="Tools the tool requests may call (default speech_to_speech.bench.quality_tools).")
    quality.add_argument("--warmup", type=int, default=1, help="Uncounted requests first (default 1).")
    languages = parsers["languages"]
    languages.add_argument("--languages", type=_names, default=None, help="Some of fr,es,de,ja (default all four).")
    languages.add_argument("--requests", type=_positive, default=None,
                           help="The first N requests of each language only (default all three).")
    languages.add_argument("--modes", type=_names, default=None,
                           help="auto (no session language), session (the session's language set), or both "
                                "(default auto,session).")
    languages.add_argument("--repeat", type=_positive, default=None, help="Times to ask every request (default 1).")
    parsers["overhead"].add_argument("--turns", type=int, default=30, help="Turns to time (default 30).")
    capacity = parsers["capacity"]
    capacity.add_argument("--sessions", type=_counts, default=(1, 2, 4, 8, 16, 32, 48),
                          help="Concurrent session counts (default 1,2,4,8,16,32,48).")
    capacity.add_argument("--turns", type=int, default=3, help="Turns per session (default 3).")
    capacity.add_argument("--budget-ms", type=float, default=50.0, help="p95 added-latency budget (default 50).")
    capacity.add_argument("--stagger-s", type=float, default=1.0, help="Session starts spread over (default 1 s).")
    capacity.add_argument("--speech", choices=("tone", "questions", "corpus"), default="tone",
                          help="What each session says: a tone (scripted VAD), or for real models the spoken "
                               "questions or bench turns' corpus of natural requests; each turn another one.")
    capacity.add_argument("--questions-dir", default=None, help="With --speech questions: the WAVs.")
    capacity.add_argument("--ends", choices=("spread", "together"), default="spread",
                          help="spread: starts over --stagger-s; together: before every turn the sessions wait "
                               "for each other and speak so that their speech ends at the same instant.")
    for name, spec in BENCHES.items():
        parsers[name].set_defaults(settings_base=spec.defaults)
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
    report = kinds.add_parser("report", help="The plot and the README table from the JSON files.")
    report.add_argument("--input-dir", type=Path, default=Path("docs/benchmarks"), help="Where the JSON files are.")
    report.add_argument("--plot", type=Path, default=None, help="The PNG (default: <input-dir>/benchmarks.png).")
    report.add_argument("--readme", type=Path, default=Path("docs/benchmarks/README.md"),
                        help="Write the table between its bench markers (default docs/benchmarks/README.md).")
    report.add_argument("--no-readme", dest="readme", action="store_const", const=None, help="Print the table only.")


def _config(name: str, args: argparse.Namespace, settings: ServerSettings) -> Any:
    """The benchmark's config from the flags given (its own defaults for the rest)."""
    given = {key: value for key, value in vars(args).items() if value is not None}
    timeout = {"timeout_s": given["timeout"]} if "timeout" in given else {}
    asked = {k: given[k] for k in ("repeat", "questions_dir", "questions") if k in given}
    if name == "startup":
        from speech_to_speech.bench.startup import StartupConfig

        return StartupConfig(units=args.units, settle_s=args.settle_s, **asked, **timeout)
    if name == "latency":
        from speech_to_speech.bench.latency import LatencyConfig

        return LatencyConfig(**asked, **timeout, warmup=args.warmup, chunk_ms=args.chunk_ms)
    if name in ("turns", "load"):
        from speech_to_speech.bench.turns import TurnsConfig

        said = TurnsConfig(repeat=args.repeat, turns=args.turns, corpus=args.corpus, clips_dir=args.clips_dir,
                           warmup=args.warmup, chunk_ms=args.chunk_ms, settle_s=args.settle_s, **timeout)
        if name == "turns":
            return said
        from speech_to_speech.bench.load import LoadConfig

        return LoadConfig(speech=said, **({"phases": args.phases} if args.phases else {}))
    if name == "conversation":
        from speech_to_speech.bench.conversation import ConversationConfig

        return ConversationConfig(corpus=args.corpus, conversations=args.conversations, turns=args.turns,
                                  warmup=args.warmup, chunk_ms=args.chunk_ms, gap_s=args.gap_s,
                                  settle_s=args.settle_s, **timeout)
    if name == "quality":
        from speech_to_speech.bench.quality import QualityConfig, set_path

        chosen: dict[str, Any] = {k: given[k] for k in ("requests", "tool_module") if k in given}
        if "request_set" in given:
            chosen["request_set"] = set_path(given["request_set"])
        return QualityConfig(**chosen, **timeout, warmup=args.warmup)
    if name == "bargein":
        from speech_to_speech.bench.bargein import LONG_ANSWER, BargeinConfig

        instructions = LONG_ANSWER if args.instructions is None else (args.instructions or None)
        return BargeinConfig(**asked, **timeout, min_speech_ms=settings.vad.min_speech_ms, instructions=instructions,
                             inject_after_ms=args.inject_after_ms, settle_ms=args.settle_ms,
                             overlap_policy=args.overlap_policy)
    if name == "echo":
        from speech_to_speech.bench.echo import LONG_ANSWER as FEW_SENTENCES
        from speech_to_speech.bench.echo import EchoConfig

        instructions = FEW_SENTENCES if args.instructions is None else (args.instructions or None)
        return EchoConfig(**asked, **timeout, delays_ms=args.delays_ms, barge_in_after_ms=args.barge_in_after_ms,
                          instructions=instructions, ack_every_ms=args.ack_every_ms or None,
                          busy_neighbours=args.busy_neighbours)
    if name == "room":
        from speech_to_speech.bench.room_flags import room_config

        return room_config(args)
    if name == "tools":
        from speech_to_speech.bench.tools_flags import tools_config

        return tools_config(args)
    if name == "languages":
        from speech_to_speech.bench.languages import LanguagesConfig

        picked = {k: given[k] for k in ("languages", "requests", "modes", "repeat") if k in given}
        return LanguagesConfig(**picked, **timeout)
    if name == "overhead":
        from speech_to_speech.bench.overhead import OverheadConfig

        return OverheadConfig(turns=args.turns, min_speech_ms=settings.vad.min_speech_ms, **timeout)
    from speech_to_speech.bench.capacity import CapacityConfig

    return CapacityConfig(sessions=args.sessions, turns=args.turns, budget_ms=args.budget_ms,
                          stagger_s=args.stagger_s, speech=args.speech, ends=args.ends,
                          questions_dir=str(args.questions_dir) if args.questions_dir else None, **timeout)


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
    config = _config(name, args, settings)
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
