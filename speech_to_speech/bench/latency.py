"""``bench latency``: end of the user's speech -> first audio delta, and where the time goes.

Each question is asked in a fresh session (so every turn sees the same
prompt), streamed in real time after a short silence, with silence after it
as a microphone would send. End of speech is when the chunk holding the
clip's last voiced sample was sent; the stage breakdown comes from the
timings extension's marks in ``response.done``.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.bench import audio
from speech_to_speech.bench.events import FIRST_SOUND, TURN_HOPS, Clock, latency_sample
from speech_to_speech.bench.mic import ask, live_mic
from speech_to_speech.bench.stats import summarize_fields
from speech_to_speech.bench.target import Target

log = logging.getLogger(__name__)

HEADLINE = "end_of_speech_to_first_audio_ms"
FIGURES = (HEADLINE, *(name for name, _, _ in TURN_HOPS), FIRST_SOUND)
LEAD_SILENCE_S = 0.3  # before each question: the VAD's prefix pad has audio to keep


@dataclass(frozen=True)
class LatencyConfig:
    repeat: int = 3
    questions_dir: Path | None = None
    questions: int | None = None  # the first N questions only
    warmup: int = 1  # turns asked first and not counted (first-call costs of a fresh server)
    chunk_ms: int = 20  # a live microphone's: with 100 ms the VAD hears a pause in steps of 100 ms
    timeout_s: float = 120.0


async def ask_once(target: Target, clip: audio.Speech, clock: Clock, config: LatencyConfig) -> dict[str, Any]:
    await target.wait_idle()
    return await ask_fresh(target.ws_url, clip, clock, chunk_ms=config.chunk_ms, timeout_s=config.timeout_s)


async def ask_fresh(url: str, clip: audio.Speech, clock: Clock, *, chunk_ms: int = 100,
                    timeout_s: float = 120.0) -> dict[str, Any]:
    """Say ``clip`` in a new session at ``url``, wait for the answer's ``response.done``, close: its sample."""
    async with live_mic(url, clip.rate, chunk_ms=chunk_ms, timeout=timeout_s, lead_s=LEAD_SILENCE_S) as (client, mic):
        said, turn = await ask(client, mic, clip, timeout_s)
    sample: dict[str, Any] = {"question": clip.name, "speech_ms": round(clip.voiced_ms, 1)}
    if said.last_voiced_sent is None:
        return {**sample, "status": turn.status, "error": "the response began before the question ended"}
    return {**sample, **latency_sample(turn, said.last_voiced_sent, clock), "heard": turn.heard,
            "reply": turn.transcript}


async def run(target: Target, config: LatencyConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """(summary, samples, config as recorded) of a latency run."""
    questions = audio.load_questions(config.questions_dir, config.questions)
    clock = Clock.now()
    for index in range(config.warmup):
        await ask_once(target, questions[index % len(questions)], clock, config)
    samples = []
    for repeat in range(config.repeat):
        for clip in questions:
            sample = {"repeat": repeat, **await ask_once(target, clip, clock, config)}
            log.info("%s: %s ms", clip.name, sample.get(HEADLINE))
            samples.append(sample)
    recorded = {**asdict(config), "questions": [q.name for q in questions],
                "questions_dir": str(config.questions_dir or audio.DEFAULT_QUESTIONS_DIR)}
    return summarize_fields(samples, FIGURES), samples, recorded
