"""``bench room``'s own flags (bench/cli_flags.py holds the other benchmarks')."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from speech_to_speech.bench.room import RoomConfig

PARTS = ("remarks", "interruptions", "background", "requests", "echo_bargein", "filters")
ACKS = {"off": False, "on": True}


def add_room_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--human-speech", type=Path, required=True,
                        help="pocketsphinx's test/data folder (pip download --no-deps --no-binary :all: "
                             "pocketsphinx; see bench/human_speech.py): the room's recorded speech.")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"Which parts, comma-separated ({', '.join(PARTS)}).")
    parser.add_argument("--remarks", type=int, default=None,
                        help="The first N listener words and interruptions of each voice (default all 10).")
    parser.add_argument("--background-s", type=float, default=60.0,
                        help="Seconds of background talk at each level (default 60).")
    parser.add_argument("--background-db", default="-20,-10",
                        help="The background's levels relative to the user, dB (default -20,-10).")
    parser.add_argument("--overlap-policy", default=None, help="The sessions' overlap_policy (default the server's).")
    parser.add_argument("--user-db", type=float, default=-20.0,
                        help="The user's voiced level at the microphone, dBFS (default -20; with --echo-db 6, "
                             "-26 keeps the echo from clipping).")
    parser.add_argument("--echo-db", default="0,6",
                        help="echo_bargein: the echo's level at the microphone relative to the user, dB (default 0,6).")
    parser.add_argument("--echo-acks", default="off,on",
                        help="echo_bargein: without and/or with playback.ack, comma-separated off,on (default both).")
    parser.add_argument("--echo-human", type=int, default=2,
                        help="echo_bargein: recorded human sentences said over the echo besides the interruptions.")
    parser.add_argument("--listener-words", default=None,
                        help="Other listener words to say, separated by '|' (default: room_audio.LISTENER_WORDS).")
    parser.add_argument("--interruptions", default=None,
                        help="Other interruptions to say, separated by '|' (default: room_audio.INTERRUPTIONS).")


def room_config(args: argparse.Namespace) -> RoomConfig:
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise SystemExit(f"bench room: unknown parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    config = RoomConfig(human_speech=args.human_speech, parts=parts, remarks=args.remarks,
                        background_s=args.background_s,
                        background_db=tuple(float(v) for v in args.background_db.split(",")),
                        overlap_policy=args.overlap_policy,
                        echo_db=tuple(float(v) for v in args.echo_db.split(",")),
                        echo_acks=tuple(ACKS[v.strip()] for v in args.echo_acks.split(",") if v.strip() in ACKS),
                        echo_human=args.echo_human, user_db=args.user_db)
    if args.timeout:
        config = replace(config, timeout_s=args.timeout)
    if args.listener_words:
        config = replace(config, listener_words=_texts(args.listener_words))
    if args.interruptions:
        config = replace(config, interruptions=_texts(args.interruptions))
    return config


def _texts(given: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in given.split("|") if t.strip())
