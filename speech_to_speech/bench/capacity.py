"""``bench capacity``: N concurrent conversations; what does each extra one cost the others?

For every N in ``sessions``, N sessions talk at once, their starts spread
over ``stagger_s``: each says a tone (speech to the scripted VAD) in real
time, waits for the answer and listens to it in real time, ``turns`` times.
With ``ends="together"`` the sessions instead wait for each other before
every turn and start speaking so that all their speech ends at the same
instant: the worst case, where every STT pass and every reply is wanted at
once (a staggered run lets one session's work fill another's pause).
Figures per N: end of speech -> first audio delta; the added latency (that
minus the median of the smallest N, normally 1); and output underruns, the
gaps a client playing the answer in real time from its first delta would
hear. The capacity is the largest N whose p95 added latency (and every
smaller N's) stays under ``budget_ms``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.bench import audio
from speech_to_speech.bench.events import Clock, audio_deltas, latency_sample, underruns
from speech_to_speech.bench.mic import PacedMic, ask, session
from speech_to_speech.bench.stats import summarize_fields
from speech_to_speech.bench.target import Target

log = logging.getLogger(__name__)

LATENCY = "end_of_speech_to_first_audio_ms"
ADDED = "added_latency_ms"
FIGURES = (LATENCY, ADDED, "underrun_ms", "underruns")
LEAD_SILENCE_S = 0.2
PAUSE_S = 0.3  # after the answer has played, before the next turn
# Talkers at once are "served" while their median end of speech -> first audio stays within this
# multiple of one session's (and every turn is answered without an underrun).
TALKERS_RATIO = 2.5
LINE_UP_TIMEOUT_S = 180.0  # the slowest session's turn, answer and playback, with room


@dataclass(frozen=True)
class CapacityConfig:
    sessions: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 48)
    turns: int = 3
    speech_s: float = 1.0
    stagger_s: float = 1.0
    budget_ms: float = 50.0
    timeout_s: float = 60.0
    # "tone": speech only the scripted VAD hears; for a server with real models, "questions": the
    # spoken benchmark questions (or the WAVs of questions_dir), "corpus": bench turns' natural
    # requests (several sentences, pauses, fillers).
    speech: str = "tone"
    questions_dir: str | None = None
    ends: str = "spread"  # "spread": starts over stagger_s; "together": every turn's speech ends at one instant


def playback_end(deltas: list[tuple[float, float]]) -> float | None:
    """When a real-time player that started at the first delta runs out (underruns included)."""
    if not deltas:
        return None
    gaps = underruns(deltas)
    return deltas[0][0] + sum(seconds for _, seconds in deltas) + gaps.total_ms / 1000.0


@dataclass(frozen=True)
class Together:
    """What the sessions of one level share when their speech ends at one instant."""

    barrier: asyncio.Barrier
    longest_end_s: tuple[float, ...]  # per turn: where the longest clip's last voiced sample is

    async def line_up(self, clip: audio.Speech, number: int) -> None:
        """Wait for every session, then for as long as makes ``clip`` end with turn ``number``'s longest."""
        await asyncio.wait_for(self.barrier.wait(), LINE_UP_TIMEOUT_S)
        await asyncio.sleep(self.longest_end_s[number] - clip.end / clip.rate)


def together(config: CapacityConfig, level: int) -> Together | None:
    if config.ends != "together":
        return None
    clips = [[_clip(config, index, number, level) for index in range(level)] for number in range(config.turns)]
    return Together(asyncio.Barrier(level), tuple(max(c.end / c.rate for c in turn) for turn in clips))


async def converse(target: Target, index: int, level: int, clock: Clock, config: CapacityConfig,
                   lined_up: Together | None = None) -> list[dict[str, Any]]:
    """One session's turns; a failure ends the session and is recorded, not raised."""
    if lined_up is None:
        await asyncio.sleep(config.stagger_s * index / level)
    samples: list[dict[str, Any]] = []
    try:
        # 20 ms chunks: a 100 ms grid would spread "the same instant" over 100 ms.
        async with session(target.ws_url, timeout=config.timeout_s) as client, \
                PacedMic(client, audio.RATE, chunk_ms=20 if lined_up else 100) as mic:
            await asyncio.sleep(LEAD_SILENCE_S)
            for number in range(config.turns):
                clip = _clip(config, index, number, level)
                if lined_up is not None:
                    await lined_up.line_up(clip, number)
                start = len(client.received)
                said, turn = await ask(client, mic, clip, config.timeout_s)
                assert said.last_voiced_sent is not None
                deltas = audio_deltas(client.received[start:], turn.response_id)
                gaps = underruns(deltas)
                samples.append({"sessions": level, "session": index, "turn": number,
                                **latency_sample(turn, said.last_voiced_sent, clock),
                                "end_of_speech_at_ms": clock.epoch_ms(said.last_voiced_sent),
                                "underruns": gaps.count, "underrun_ms": gaps.total_ms,
                                "answer_ms": round(sum(s for _, s in deltas) * 1000.0, 1)})
                # Listen to the answer before speaking again, as a person would.
                end = playback_end(deltas) or 0.0
                await asyncio.sleep(max(0.0, end - time.monotonic()) + PAUSE_S)
    except asyncio.BrokenBarrierError:
        pass  # another session failed (and recorded why): this one stops with its turns so far
    except (TimeoutError, AssertionError, OSError, RuntimeError) as error:
        if lined_up is not None:
            await lined_up.barrier.abort()  # the others must not wait for this session's next turn
        samples.append({"sessions": level, "session": index, "turn": len(samples),
                        "error": f"{type(error).__name__}: {error}"})
    return samples


def _clip(config: CapacityConfig, index: int, number: int, level: int) -> audio.Speech:
    """What session ``index`` says on turn ``number``: each turn of each session another request, while
    there are enough (session i's turn t is request i + t * level, round the set)."""
    if config.speech == "tone":
        return audio.tone_speech(config.speech_s)
    requests = _requests(config.speech, config.questions_dir)
    return requests[(index + number * level) % len(requests)]


@functools.cache
def _requests(speech: str, folder: str | None) -> tuple[audio.Speech, ...]:
    if speech == "corpus":
        from speech_to_speech.bench import corpus

        return tuple(corpus.clips(corpus.load_corpus()))
    return tuple(audio.load_questions(Path(folder) if folder else None))


def add_added_latency(samples: list[dict[str, Any]], baseline_ms: float) -> None:
    for sample in samples:
        if sample.get(LATENCY) is not None:
            sample[ADDED] = round(sample[LATENCY] - baseline_ms, 2)


def largest_passing(levels: dict[int, dict[str, Any]], passes: Callable[[dict[str, Any]], bool]) -> int:
    """The largest N whose level, and every smaller N's, ``passes`` (0 if the smallest does not)."""
    best = 0
    for level in sorted(levels):
        if not passes(levels[level]):
            break
        best = level
    return best


def capacity(levels: dict[int, dict[str, Any]], budget_ms: float) -> int:
    """The largest N whose p95 added latency, and every smaller N's, is under the budget (0 if none)."""
    return largest_passing(levels, lambda stats: stats[ADDED]["p95"] is not None
                           and stats[ADDED]["p95"] < budget_ms and not stats["errors"])


def talkers(levels: dict[int, dict[str, Any]], ratio: float) -> int:
    """The largest N (every smaller N too) with p50 within ``ratio`` of the smallest N's, no failed or
    unanswered turn, and no underrun: how many may talk at the same moment and still be served."""
    if not levels:
        return 0
    baseline = levels[min(levels)][LATENCY]["p50"]

    def served(stats: dict[str, Any]) -> bool:
        p50 = stats[LATENCY]["p50"]
        return (baseline is not None and p50 is not None and p50 <= ratio * baseline and not stats["errors"]
                and stats[LATENCY]["n"] >= stats["turns"] and not stats["underruns"]["max"])

    return largest_passing(levels, served)


async def run(target: Target, config: CapacityConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    pool = target.pool_size()
    if max(config.sessions) > pool:
        raise ValueError(f"the server has {pool} pipeline unit(s); {max(config.sessions)} sessions need as many")
    clock = Clock.now()
    samples: list[dict[str, Any]] = []
    levels: dict[int, dict[str, Any]] = {}
    baseline: float | None = None
    for level in sorted(config.sessions):
        await target.wait_idle(timeout=60.0)
        lined_up = together(config, level)
        results = await asyncio.gather(*(converse(target, i, level, clock, config, lined_up) for i in range(level)))
        rows = [row for rows in results for row in rows]
        timed = [row[LATENCY] for row in rows if row.get(LATENCY) is not None]
        if baseline is None and timed:
            baseline = statistics.median(timed)
        add_added_latency(rows, baseline or 0.0)
        levels[level] = {**summarize_fields(rows, FIGURES), "errors": sum(1 for row in rows if "error" in row),
                         "turns": level * config.turns}
        log.info("N=%d: p50 %s ms, p95 %s ms", level, levels[level][LATENCY]["p50"], levels[level][LATENCY]["p95"])
        samples += rows
    summary = {
        "sessions": {str(level): stats for level, stats in levels.items()},
        "baseline_ms": baseline,
        "budget_ms": config.budget_ms,
        "max_sessions_within_budget": capacity(levels, config.budget_ms),
        "ends": config.ends,
        "talkers_ratio": TALKERS_RATIO,
        "max_talkers_within_ratio": talkers(levels, TALKERS_RATIO),
    }
    return summary, samples, asdict(config)
