"""Each benchmark's config from the ``speech-to-speech bench`` flags given (its own defaults for the rest).

The benchmark modules are imported when chosen: each pulls in what only it needs.
"""

from __future__ import annotations

import argparse
from typing import Any

from speech_to_speech.config import ServerSettings


def bench_config(name: str, args: argparse.Namespace, settings: ServerSettings) -> Any:
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
