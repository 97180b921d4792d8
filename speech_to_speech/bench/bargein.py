"""``bench bargein``: the user talks over the assistant; how fast does it stop, and does it stop?

Per trial, in a fresh session: ask a question, and once the answer's audio
is arriving (``inject_after_ms`` after its first delta) start saying another
question. Figures: start of that speech (the chunk holding its first voiced
sample sent) -> ``response.done`` with status ``cancelled`` read; the time
beyond the VAD's own detection window (from the append that completes
``min_speech_ms`` of that speech, the earliest the VAD can call it, so the
append size does not count); and milliseconds of the old response's audio
read after its ``response.done`` (goal 0). A trial whose answer completed
before the interruption was detected is counted as missed, not timed.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.bench import audio
from speech_to_speech.bench.events import AUDIO_DELTA, audio_after, first, of_type
from speech_to_speech.bench.mic import PacedMic, session
from speech_to_speech.bench.stats import summarize_fields
from speech_to_speech.bench.target import Target

FIGURES = ("speech_to_cancelled_ms", "beyond_detection_window_ms", "speech_to_speech_started_ms",
           "speech_started_to_cancelled_ms", "stale_audio_ms")
# Real models answer in a sentence or two: ask for a long answer, so there is one to interrupt.
LONG_ANSWER = "You are a helpful voice assistant. Answer every question at length, in at least six sentences."
WINDOW = "detection_window"  # the mark of the sample that completes min_speech_ms
SCRIPTED_REPLY = " ".join(["This is a long scripted answer that keeps on speaking, clause after clause."] * 6)


@dataclass(frozen=True)
class BargeinConfig:
    repeat: int = 2
    questions_dir: Path | None = None
    questions: int | None = None
    min_speech_ms: int = 250  # the server's VAD detection window
    inject_after_ms: float = 300.0  # after the first audio delta of the answer
    settle_ms: float = 1000.0  # listening for stale audio after the cancellation
    instructions: str | None = LONG_ANSWER
    chunk_ms: int = 100
    timeout_s: float = 120.0
    overlap_policy: str | None = None  # the session's overlap_policy (None: the server's default)


async def trial(target: Target, question: audio.Speech, interruption: audio.Speech,
                config: BargeinConfig) -> dict[str, Any]:
    await target.wait_idle()
    fields: dict[str, Any] = {"instructions": config.instructions} if config.instructions else {}
    if config.overlap_policy:
        fields["overlap_policy"] = config.overlap_policy
    sample: dict[str, Any] = {"question": question.name, "interruption": interruption.name}
    async with session(target.ws_url, timeout=config.timeout_s, **fields) as client, \
            PacedMic(client, question.rate, config.chunk_ms) as mic:
        mic.say(question)
        delta = await client.wait_for(AUDIO_DELTA, config.timeout_s)
        rid = delta["response_id"]
        await asyncio.sleep(config.inject_after_ms / 1000.0)
        window = interruption.start + config.min_speech_ms * interruption.rate // 1000 - 1
        said = mic.say(interruption, {WINDOW: min(window, interruption.end - 1)})
        start = len(client.received)
        await client.wait_for(of_type("response.done", rid), config.timeout_s)
        await asyncio.sleep(config.settle_ms / 1000.0)
        log = list(client.received)
    done = first(log, of_type("response.done", rid))
    assert done is not None
    status = done.event["response"]["status"]
    said_before = first(log, of_type("response.output_audio_transcript.done", rid))
    sample["answer_audio_ms"] = audio_after(log, rid, 0.0)
    sample["reply"] = said_before.event.get("transcript", "") if said_before else ""
    began, heard = said.first_voiced_sent, said.sent.get(WINDOW)
    if status != "cancelled" or began is None or heard is None or done.at < began:
        return {**sample, "status": status, "missed": True}
    started = first(log[start:], of_type("input_audio_buffer.speech_started"))
    decided = first(log[start:], of_type("overlap.decision"))  # when the session chose a policy
    if decided is not None:
        meta = decided.event.get("metadata") or {}
        sample["overlap"] = {"action": decided.event.get("action"), "reason": decided.event.get("reason"),
                             "overlap_ms": meta.get("overlap_ms"), "transcript": meta.get("transcript")}
    cancelled_ms = (done.at - began) * 1000.0
    return {
        **sample,
        "status": status,
        "missed": False,
        "speech_to_cancelled_ms": round(cancelled_ms, 2),
        "beyond_detection_window_ms": round((done.at - heard) * 1000.0, 2),
        "speech_to_speech_started_ms": round((started.at - began) * 1000.0, 2) if started else None,
        "speech_started_to_cancelled_ms": round((done.at - started.at) * 1000.0, 2) if started else None,
        "stale_audio_ms": audio_after(log, rid, done.at),
        "reason": (done.event["response"].get("status_details") or {}).get("reason"),
    }


async def run(target: Target, config: BargeinConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    questions = audio.load_questions(config.questions_dir, config.questions)
    samples = []
    for repeat in range(config.repeat):
        for index, question in enumerate(questions):
            # Interrupt with the next question: real speech, not the same words again.
            interruption = questions[(index + 1) % len(questions)]
            samples.append({"repeat": repeat, **await trial(target, question, interruption, config)})
    summary: dict[str, Any] = summarize_fields([s for s in samples if not s["missed"]], FIGURES)
    summary["missed"] = sum(1 for s in samples if s["missed"])
    summary["trials"] = len(samples)
    summary["min_speech_ms"] = config.min_speech_ms
    recorded = {**asdict(config), "questions": [q.name for q in questions],
                "questions_dir": str(config.questions_dir or audio.DEFAULT_QUESTIONS_DIR)}
    return summary, samples, recorded
