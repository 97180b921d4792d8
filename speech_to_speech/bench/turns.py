"""``bench turns``: does every natural spoken request get one answer, and how soon?

Each request of the spoken-turn corpus (:mod:`corpus`; or the WAVs of
``clips_dir``) is said in a fresh session, streamed like a live microphone
in real time with server VAD on; silence follows, so the turn can end. The
bench then listens until the turn has run its course (:func:`outcome.quiet`:
``settle_s`` with nothing open and nothing read, which also catches a second
answer) or ``timeout_s`` has passed since the request's audio was all sent.

Per request: answered or not, every response's status and
``status_details``, how many responses produced audio (more than one is a
double answer), what the turn detector decided when it ended each turn (on
the response that turn opened), what the server heard and replied, and end
of speech (the chunk holding the last voiced sample sent) -> the answer's
first audio delta read (of the first answer begun after the end of speech:
a reply begun on a pause inside the request is a false start, counted as a
double answer or a reply taken back, not timed). The summary counts answered and double-answered
requests, the responses that ended otherwise with their reasons, the turn
ends by the detector's outcome (why a request was split), and the latency's
p50/p95 over the answered turns.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import websockets

from speech_to_speech.bench import audio, corpus
from speech_to_speech.bench.events import FIRST_SOUND, TURN_HOPS, Clock, first_sound, hops, turn
from speech_to_speech.bench.mic import FINISHED, Said, live_mic
from speech_to_speech.bench.outcome import Outcome, outcome, quiet
from speech_to_speech.bench.stats import summarize, summarize_fields
from speech_to_speech.bench.target import Target
from speech_to_speech.testing.realtime_client import RealtimeTestClient, ServerClosed

# A session that could not be had or was lost: that request is recorded as failed, the run goes on.
SESSION_ERRORS = (TimeoutError, OSError, RuntimeError, ServerClosed, websockets.exceptions.WebSocketException)

log = logging.getLogger(__name__)

LATENCY = "end_of_speech_to_first_audio_ms"
FIGURES = (LATENCY, *(name for name, _, _ in TURN_HOPS), FIRST_SOUND)  # the answer's latency, and where it went
LEAD_SILENCE_S = 0.3  # the stream is live before the first word, as a microphone's is
POLL_S = 0.05  # how often the listener looks at the log (event times are their read times, not this)


@dataclass(frozen=True)
class TurnsConfig:
    repeat: int = 1
    turns: int | None = None  # the first N requests only
    corpus: Path | None = None  # default: the packaged corpus
    clips_dir: Path | None = None  # WAVs to say instead of the corpus (any clip the server's VAD hears)
    warmup: int = 1  # requests said first and not counted (first-call costs of a fresh server)
    chunk_ms: int = 20
    settle_s: float = 1.5
    timeout_s: float = 60.0


def load_clips(config: TurnsConfig) -> tuple[list[audio.Speech], str]:
    """The clips to say and where they came from."""
    if config.clips_dir is not None:
        found = audio.load_wavs(config.clips_dir, config.turns)
        if not found:
            raise ValueError(f"no WAV files in {config.clips_dir}")
        return found, str(config.clips_dir)
    path = config.corpus or corpus.DEFAULT_CORPUS
    return corpus.clips(corpus.load_corpus(path), config.turns), str(path)


async def listen(client: RealtimeTestClient, start: int, since: float, config: TurnsConfig) -> str | None:
    """Wait until the turn logged from ``start`` is quiet; what went wrong instead, if anything."""
    deadline = since + config.timeout_s
    while True:
        now = time.monotonic()
        if quiet(client.received[start:], since, now, config.settle_s):
            return None
        if client.close_code is not None:
            return f"the server closed the session (code {client.close_code})"
        if now > deadline:
            return f"the turn was still open {config.timeout_s:.0f} s after the request was said"
        await asyncio.sleep(POLL_S)


async def speak(target: Target, clip: audio.Speech, config: TurnsConfig,
                together: asyncio.Barrier | None = None) -> dict[str, Any]:
    """Say ``clip`` in a fresh session and listen to what comes of it: its sample (unanswered if it failed).

    Alone, it first waits for the server to drain the last turn. With
    ``together``, the caller has waited (a session of the group would see the
    others' units taken), and the clip is said once every session waiting on
    that barrier has its microphone live (``bench load`` says two at the same
    moment); a session that fails first breaks the barrier, so the others
    are recorded as not said instead of waiting for it.
    """
    try:
        return await _speak(target, clip, config, together)
    except asyncio.BrokenBarrierError:
        return turn_sample(clip, Said(clip), Outcome((), ()), "not said: a session meant to speak at the same "
                                                              "moment failed first")
    except SESSION_ERRORS as error:
        if together is not None:
            await together.abort()
        return turn_sample(clip, Said(clip), Outcome((), ()), f"{type(error).__name__}: {error}")


async def _speak(target: Target, clip: audio.Speech, config: TurnsConfig,
                 together: asyncio.Barrier | None) -> dict[str, Any]:
    if together is None:
        await target.wait_idle()
    async with live_mic(target.ws_url, clip.rate, chunk_ms=config.chunk_ms, timeout=config.timeout_s,
                        lead_s=LEAD_SILENCE_S) as (client, mic):
        if together is not None:
            await together.wait()
        start = len(client.received)
        said = mic.say(clip)
        await asyncio.wait_for(said.finished.wait(), len(clip.samples) / clip.rate + config.timeout_s)
        problem = await listen(client, start, said.sent[FINISHED], config)
        log_of_turn = client.received[start:]
    result = outcome(log_of_turn)
    sample = turn_sample(clip, said, result, problem)
    answer = result.answer_after(said.last_voiced_sent)
    if answer is not None and said.last_voiced_sent is not None:
        answered = turn(log_of_turn, answer.id)
        sample.update(first_sound(sample.get(LATENCY), answered.lead_silence_ms))
        sample.update(hops({**answered.marks, "end_of_speech": Clock.now().epoch_ms(said.last_voiced_sent),
                            "first_audio_received": Clock.now().epoch_ms(answer.first_audio_at or 0.0)}))
    return sample


def turn_sample(clip: audio.Speech, said: Said, result: Outcome, problem: str | None) -> dict[str, Any]:
    sample: dict[str, Any] = {
        "request": clip.name,
        "text": clip.text,
        "speech_ms": round(clip.voiced_ms, 1),
        "answered": result.answered,
        "double": result.double,
        "taken_back": result.taken_back,
        "audio_responses": result.audio_responses,
        "responses": [{"id": r.id, "status": r.status, "status_details": r.status_details, "ending": r.ending,
                       "audio_ms": round(r.audio_ms, 1), "reply": r.transcript,
                       "turn_detection": r.turn_detection, "taken_back": r.taken_back,
                       **({"heard_ms": round(r.heard_ms, 1)} if r.heard_ms is not None else {})}
                      for r in result.responses],
        "heard": list(result.heard),
    }
    if said.first_voiced_sent is not None:  # when (epoch ms) the chunk holding the first word left
        sample["speech_sent_at_ms"] = round(Clock.now().epoch_ms(said.first_voiced_sent), 1)
    end_of_speech = said.last_voiced_sent
    answer = result.answer_after(end_of_speech)
    if answer is not None and answer.first_audio_at is not None and end_of_speech is not None:
        sample[LATENCY] = round((answer.first_audio_at - end_of_speech) * 1000.0, 2)
    if problem is not None:
        sample["error"] = problem
    return sample


def summarize_turns(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Answered and double-answered requests, the responses that ended otherwise, latency of the answered."""
    answered = sum(1 for s in samples if s["answered"])
    ended_otherwise = Counter(r["ending"] for s in samples for r in s["responses"] if r["status"] != "completed")
    # Each turn's end as the detector decided it (finished, timed_out, disputed, no_answer): a split
    # request has two ends, and their outcomes say why the first was taken for the end.
    turn_ends = Counter(str(r["turn_detection"].get("outcome")) for s in samples for r in s["responses"]
                        if r.get("turn_detection"))
    return {
        **summarize_fields(samples, FIGURES),
        "requests": len(samples),
        "answered": answered,
        "answered_rate": round(answered / len(samples), 3) if samples else None,
        "double_answers": sum(1 for s in samples if s["double"]),
        # Replies taken back because the user went on (a request answered after its first sentence).
        "taken_back": sum(s.get("taken_back", 0) for s in samples),
        # How much of each taken-back reply the user could have heard before it stopped (ms).
        "taken_back_heard_ms": summarize(r["heard_ms"] for s in samples for r in s["responses"] if "heard_ms" in r),
        # Requests the server heard as more than one turn (a pause taken for the end of the turn).
        "split_requests": sum(1 for s in samples if len(s["heard"]) > 1),
        "unanswered": [f"{s['request']} (repeat {s['repeat']})" for s in samples if not s["answered"]],
        "not_completed": dict(sorted(ended_otherwise.items())),
        "turn_outcomes": dict(sorted(turn_ends.items())),
        "errors": sum(1 for s in samples if "error" in s),
    }


async def warm_up(target: Target, clips: list[audio.Speech], config: TurnsConfig) -> None:
    """The ``warmup`` requests, said and not counted: the first-call costs of a fresh server."""
    for index in range(config.warmup):
        await speak(target, clips[index % len(clips)], config)


async def say_all(target: Target, clips: list[audio.Speech], config: TurnsConfig,
                  **tags: Any) -> list[dict[str, Any]]:
    """Every clip ``repeat`` times, one session at a time: a sample each (with its repeat and ``tags``)."""
    samples = []
    for repeat in range(config.repeat):
        for clip in clips:
            sample = {**tags, "repeat": repeat, **await speak(target, clip, config)}
            log.info("%s: answered %s, %d response(s) with audio, %s ms", clip.name, sample["answered"],
                     sample["audio_responses"], sample.get(LATENCY))
            samples.append(sample)
    return samples


def recorded(config: TurnsConfig, clips: list[audio.Speech], source: str, target: Target) -> dict[str, Any]:
    """The config as the result file records it: the flags, the clips said, the server's turn settings."""
    settings = target.settings
    return {
        **{key: str(value) if isinstance(value, Path) else value for key, value in asdict(config).items()},
        "source": source,
        "clips": [corpus.describe(clip) for clip in clips],
        # What decides whether a pause ends a turn (unknown for a server at --url).
        "server_turn_settings": None if settings is None else {
            "min_silence_ms": settings.vad.min_silence_ms,
            "speculation_silence_ms": settings.turns.speculation_silence_ms,
            "turn_detector": settings.turns.detector, "turn_pause_ms": settings.turns.pause_ms,
            "max_turn_silence_ms": settings.turns.max_turn_silence_ms},
    }


async def run(target: Target, config: TurnsConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """(summary, samples, config as recorded) of a turns run."""
    clips, source = load_clips(config)
    await warm_up(target, clips, config)
    samples = await say_all(target, clips, config)
    return summarize_turns(samples), samples, recorded(config, clips, source, target)
