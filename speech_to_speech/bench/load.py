"""``bench load``: how much later does the answer come when the server is not alone on the machine?

``bench turns`` measures a server with the machine to itself and one caller.
A small machine rarely gives it that: another program computes beside it,
and two people may talk at the same moment. This bench says the spoken-turn
corpus three times on one server, in this order, and compares:

- ``alone``: one session at a time, as ``bench turns`` does (its code: every
  request in a fresh session, streamed like a live microphone);
- ``busy_neighbour``: the same, while a child process keeps one core busy
  (:mod:`neighbour`: started before the phase, killed after it);
- ``two_at_once``: the requests in pairs (the 1st with the 2nd, the 3rd with
  the 4th, …; an odd last one with the first again), two sessions whose
  microphones are both live before either speaks, then both start their
  request at the same moment (within one microphone chunk: each microphone
  keeps its own schedule, and each pair records its ``start_skew_ms``).

Per phase: the turns bench's summary (requests answered, every response's
ending, double answers, end of speech -> first audio delta p50/p95); for
``two_at_once`` also the slower of each pair. Then the ratios of each phase's
p50 to the ``alone`` p50, and whether every turn of the run was answered.

The server needs two pipeline units for ``two_at_once``; the one this bench
starts gets them, a server at ``--url`` with fewer is refused before any turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech.bench import audio
from speech_to_speech.bench.neighbour import busy_core
from speech_to_speech.bench.stats import summarize
from speech_to_speech.bench.target import Target
from speech_to_speech.bench.turns import (
    LATENCY,
    LEAD_SILENCE_S,
    TurnsConfig,
    load_clips,
    recorded,
    say_all,
    speak,
    summarize_turns,
    warm_up,
)

log = logging.getLogger(__name__)

ALONE, BUSY, TWO = "alone", "busy_neighbour", "two_at_once"
PHASES = (ALONE, BUSY, TWO)
SLOWER = "slower_of_pair_ms"  # the two_at_once figure of the later of a pair's two answers
IDLE_WAIT_S = 30.0  # Target.wait_idle's default, before every turn
MARGIN_S = 60.0


@dataclass(frozen=True)
class LoadConfig:
    speech: TurnsConfig = field(default_factory=TurnsConfig)  # what is said, and how (as bench turns)
    phases: tuple[str, ...] = PHASES  # a subset, run in PHASES' order


def parse_phases(text: str) -> tuple[str, ...]:
    """``"alone,two_at_once"`` -> those phases in the order they run; ValueError on an unknown or no phase."""
    asked = {name.strip() for name in text.replace(",", " ").split()}
    unknown = asked - set(PHASES)
    if unknown or not asked:
        raise ValueError(f"phases are {', '.join(PHASES)}; got {text!r}")
    return tuple(name for name in PHASES if name in asked)


def pairs(clips: Sequence[audio.Speech]) -> list[tuple[audio.Speech, audio.Speech]]:
    """Neighbours in the corpus said together; an odd last clip with the first (a single clip with itself)."""
    found = [(clips[i], clips[i + 1]) for i in range(0, len(clips) - 1, 2)]
    if len(clips) % 2:
        found.append((clips[-1], clips[0]))
    return found


def neighbour_limit_s(clips: Sequence[audio.Speech], config: TurnsConfig) -> float:
    """The longest the busy phase can take (every turn waiting out every wait): the neighbour's own end."""
    per_turn = IDLE_WAIT_S + LEAD_SILENCE_S + 2 * config.timeout_s + config.settle_s
    return config.repeat * sum(per_turn + len(clip.samples) / clip.rate for clip in clips) + MARGIN_S


async def say_in_pairs(target: Target, clips: list[audio.Speech], config: TurnsConfig) -> list[dict[str, Any]]:
    """Every pair of :func:`pairs`, ``repeat`` times, both at once: a sample per turn, tagged with its pair."""
    samples = []
    for repeat in range(config.repeat):
        for number, (first, second) in enumerate(pairs(clips)):
            together = asyncio.Barrier(2)
            await target.wait_idle()
            said = await asyncio.gather(speak(target, first, config, together),
                                        speak(target, second, config, together))
            for sample, partner in zip(said, (second, first), strict=True):
                samples.append({"phase": TWO, "repeat": repeat, "pair": number, "partner": partner.name, **sample})
            log.info("pair %d (%s, %s): %s ms", number, first.name, second.name, [s.get(LATENCY) for s in said])
    return samples


def slower_of_pairs(samples: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per pair of the two_at_once samples: its requests, the later answer's latency, and how far apart the
    two started speaking (``start_skew_ms``: under a microphone chunk when the moment was the same).

    ``slower_ms`` is None when either turn went unanswered: the slower answer
    never came, and a time would flatter the pair.
    """
    grouped: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for sample in samples:
        if sample.get("phase") == TWO:
            grouped.setdefault((sample["repeat"], sample["pair"]), []).append(sample)
    found = []
    for (repeat, number), turns in sorted(grouped.items()):
        times = [turn.get(LATENCY) for turn in turns]
        complete = len(turns) == 2 and all(t is not None for t in times)
        starts = [turn["speech_sent_at_ms"] for turn in turns if turn.get("speech_sent_at_ms") is not None]
        found.append({"repeat": repeat, "pair": number, "requests": [turn["request"] for turn in turns],
                      "slower_ms": max(t for t in times if t is not None) if complete else None,
                      "start_skew_ms": round(max(starts) - min(starts), 1) if len(starts) == 2 else None})
    return found


def ratio(value: float | None, base: float | None) -> float | None:
    return None if value is None or not base else round(value / base, 3)


def summarize_load(samples: Sequence[dict[str, Any]], neighbour: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each phase's turns summary, the ratios of its p50 to alone's, and whether every turn was answered.

    ``neighbour`` is what the busy phase's neighbour did (:class:`neighbour.Neighbour`'s report).

    ``two_at_once_slowest_ratio`` is the median over pairs of the slower
    answer's latency, over the alone p50; ``two_at_once_slowest_max_ratio``
    the slowest pair's (the run's worst two-at-once turn) over it. A ratio is
    None when a phase was not run or had no answered turn.
    """
    phases: dict[str, dict[str, Any]] = {}
    for phase in PHASES:
        rows = [sample for sample in samples if sample.get("phase") == phase]
        if rows:
            phases[phase] = summarize_turns(rows)
    if BUSY in phases and neighbour is not None:
        phases[BUSY]["neighbour"] = neighbour
    slower: dict[str, Any] = summarize([])
    if TWO in phases:
        found = slower_of_pairs(samples)
        slower = summarize(pair["slower_ms"] for pair in found)
        phases[TWO].update({SLOWER: slower, "pairs": found})

    def p50(phase: str) -> float | None:
        return phases[phase][LATENCY]["p50"] if phase in phases else None

    alone = p50(ALONE)
    return {
        "phases": phases,
        "alone_p50_ms": alone,
        "busy_neighbour_ratio": ratio(p50(BUSY), alone),
        "two_at_once_ratio": ratio(p50(TWO), alone),
        "two_at_once_slowest_ratio": ratio(slower["p50"], alone),
        "two_at_once_slowest_max_ratio": ratio(slower["max"], alone),
        "requests": len(samples),
        "answered": sum(1 for sample in samples if sample["answered"]),
        "all_answered": bool(samples) and all(sample["answered"] for sample in samples),
    }


async def run(target: Target, config: LoadConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """(summary, samples, config as recorded) of a load run: the phases one after another on one server."""
    if TWO in config.phases and (units := target.pool_size()) < 2:
        raise ValueError(f"the server has {units} pipeline unit(s); {TWO} needs 2 (serve --num_pipelines 2)")
    said = config.speech
    clips, source = load_clips(said)
    await warm_up(target, clips, said)
    samples: list[dict[str, Any]] = []
    neighbour: dict[str, Any] | None = None
    for phase in config.phases:
        log.info("phase %s", phase)
        if phase == ALONE:
            samples += await say_all(target, clips, said, phase=ALONE)
        elif phase == BUSY:
            with busy_core(neighbour_limit_s(clips, said)) as spinning:
                samples += await say_all(target, clips, said, phase=BUSY)
            neighbour = spinning.report
        else:
            samples += await say_in_pairs(target, clips, said)
    summary = summarize_load(samples, neighbour)
    return summary, samples, {**recorded(said, clips, source, target), "phases": list(config.phases)}
