"""``bench echo``: a client whose microphone hears its own speaker, with and without echo cancellation.

Per trial, in a fresh session: say a question through the echo rig
(:mod:`speech_to_speech.testing.echo_rig`), whose microphone hears every
answer it plays through a simulated room at one of ``delays_ms``, with the
session's echo cancellation off or on (the ``speech_to_speech.echo_cancellation``
extension). Figures per mode: answers that played out (the first response
completed or incomplete), self-interruptions (``input_audio_buffer.speech_started`` while
the answer plays, which a client that clears its playback on it turns into a
cut-off answer) and how far into the answer each came, echo turns (user
transcripts after the question's: the assistant's own words, heard as the
user's) and extra responses. The rig acks what it played every
``ack_every_ms``, as the packaged client does, unless that is None.

Then the user really talks over the answer (the next question,
``barge_in_after_ms`` into it), with cancellation on, once with the echo and
once without (the room silent): start of that speech -> ``speech_started``
while the answer still plays, so the echo's cost to a real barge-in shows as
a ratio (a trial whose answer had played out is counted apart).

With ``busy_neighbours``, that many processes each keep a core busy beside
the server through those trials (:mod:`neighbour`), as a browser or a build
would: the echo on a loaded machine.

Then four sessions at once (as many as the pool holds, up to four), each
asking a question through the rig with cancellation on: what they got, and
the server's canceller CPU per second of microphone audio and as a share of
a core, read from ``/metrics`` (``s2s_echo_cancellation_cpu_seconds``); the
one-at-a-time trials report the same per second of audio.

Beside them, offline: the canceller's echo return loss enhancement in dB and
its CPU per second of audio on the questions through the same rooms, for
one session and for four at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from speech_to_speech.audio.echo import EchoCanceller
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio
from speech_to_speech.bench.neighbour import busy_core
from speech_to_speech.bench.stats import summarize
from speech_to_speech.bench.target import Target
from speech_to_speech.protocol import ECHO_CANCELLATION_EXTENSION
from speech_to_speech.testing.echo_rig import EchoRun, Interruption, request_went_on, speak_beside_speaker
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.room import Room

MODES = ("off", "on")
NEIGHBOUR_LIMIT_S = 3600.0  # a busy neighbour stops by itself after this, should the bench die without killing it
ANSWERED = ("completed", "incomplete")  # an answer that played out (incomplete: cut at its token limit)
SETTLED_S = 2.0  # the canceller has found the echo path by then (the ERLE counts what follows)
LONG_ANSWER = "You are a helpful voice assistant. Answer every question in three or four sentences."
# Talked over while it is still being generated, so the cancellation is the server's to make and time.
LONGER_ANSWER = "You are a helpful voice assistant. Answer every question at length, in at least six sentences."


@dataclass(frozen=True)
class EchoConfig:
    repeat: int = 1
    questions_dir: Path | None = None
    questions: int | None = None
    delays_ms: tuple[int, ...] = (60, 150, 250)
    barge_in_after_ms: float = 300.0
    instructions: str | None = LONG_ANSWER
    timeout_s: float = 60.0
    ack_every_ms: int | None = 100  # the packaged client's playback.ack interval
    busy_neighbours: int = 0  # processes spinning a core each beside the server through the echo trials


async def speak(target: Target, question: audio.Speech, room: Room, config: EchoConfig, *, cancel: bool,
                 instructions: str | None, interruption: Interruption | None = None) -> tuple[EchoRun, list[float]]:
    """One fresh session through the rig; the run and when each of its events was read (``bench room``'s
    echo_bargein part runs its trials through it too)."""
    await target.wait_idle()
    async with RealtimeTestClient.connect(target.ws_url, timeout=config.timeout_s, validate=False) as client:
        await client.wait_for("session.created")
        fields: dict[str, Any] = {"extensions": [ECHO_CANCELLATION_EXTENSION] if cancel else []}
        if instructions:
            fields["instructions"] = instructions
        await client.update_session(fields)
        run = await speak_beside_speaker(client, question.samples, question.rate, room,
                                         listen_s=config.timeout_s, interruption=interruption,
                                         ack_every_ms=config.ack_every_ms)
        return run, [r.at for r in client.received]


def _outcome(run: EchoRun, received_at: list[float], question: audio.Speech) -> dict[str, Any]:
    statuses = run.response_statuses
    started = run.answer_started_at
    heard = [] if started is None else run.speech_started(received_at)
    into_answer = [round((at - received_at[started or 0]) * 1000.0) for at, start_ms in heard
                   if not request_went_on(start_ms, question.end_ms)]
    return {
        "answered": bool(statuses) and statuses[0] in ANSWERED and started is not None,
        "self_interruptions": len(into_answer),
        "self_interruption_ms_into_answer": into_answer,  # from the first audio delta read
        "request_went_on": len(heard) - len(into_answer),
        "echo_turns": max(0, len(run.user_transcripts) - 1),
        "extra_responses": max(0, len(statuses) - 1),
        "user_transcripts": run.user_transcripts,
        "statuses": statuses,
    }


def _barge_in_ms(run: EchoRun, received_at: list[float]) -> dict[str, Any]:
    """Start of the user's speech -> ``speech_started`` (where a stock client stops its playback), if the answer
    still played when they spoke: one made faster than it is spoken has its ``response.done`` long before, so
    "cancelled" missed half the trials, with and without the echo."""
    began = run.interruption_voiced_at
    if began is None or not run.playing_when_voiced:
        return {"played_out": True, "heard": False}
    started = next((at for at in run.speech_started_at(received_at) if at >= began), None)
    if started is None:
        return {"played_out": False, "heard": False}
    return {"played_out": False, "heard": True, "speech_to_speech_started_ms": round((started - began) * 1000.0, 1)}


async def _barge_in(target: Target, question: audio.Speech, interruption: audio.Speech, room: Room,
                    config: EchoConfig) -> dict[str, Any]:
    said = Interruption(config.barge_in_after_ms, interruption.samples, interruption.start)
    run, received_at = await speak(target, question, room, config, cancel=True,
                                    instructions=LONGER_ANSWER if config.instructions else None, interruption=said)
    return _barge_in_ms(run, received_at)


def _canceller_counters(target: Target) -> tuple[float, float]:
    """(seconds of microphone audio cancelled, CPU seconds it took) so far, from the server's /metrics."""
    text = httpx.get(target.http_url + "/metrics", timeout=10.0).text
    counted = dict(re.findall(r"^s2s_echo_(cancelled_audio|cancellation_cpu)_seconds_total (\S+)$", text, re.M))
    return float(counted.get("cancelled_audio", 0.0)), float(counted.get("cancellation_cpu", 0.0))


def _server_cost(before: tuple[float, float], after: tuple[float, float], wall_s: float) -> dict[str, Any]:
    audio_s, cpu_s = after[0] - before[0], after[1] - before[1]
    return {"cancelled_audio_s": round(audio_s, 2), "cpu_s": round(cpu_s, 3),
            "cpu_s_per_audio_s": round(cpu_s / audio_s, 4) if audio_s else None,
            "share_of_a_core": round(cpu_s / wall_s, 4) if wall_s else None}


async def _at_once(target: Target, questions: list[audio.Speech],
                   config: EchoConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Up to four sessions talking at once through the rig, cancellation on; the server's canceller cost."""
    count = min(4, target.pool_size())
    questions = [questions[index % len(questions)] for index in range(count)]
    delay = config.delays_ms[len(config.delays_ms) // 2]
    before, started = _canceller_counters(target), time.monotonic()
    runs = await asyncio.gather(*(
        speak(target, question, Room(delay_ms=delay, rate=question.rate), config, cancel=True,
               instructions=config.instructions) for question in questions))
    cost = _server_cost(before, _canceller_counters(target), time.monotonic() - started)
    outcomes = [{"kind": "at_once", "question": question.name, "delay_ms": delay,
                 **_outcome(run_, received_at, question)}
                for question, (run_, received_at) in zip(questions, runs, strict=True)]
    summary = {"sessions": count, "delay_ms": delay, "answered": sum(o["answered"] for o in outcomes),
               "runs_with_self_interruption": sum(bool(o["self_interruptions"]) for o in outcomes),
               "echo_turns": sum(o["echo_turns"] for o in outcomes), "server": cost}
    return summary, outcomes


def offline_figures(questions: list[audio.Speech], delays_ms: tuple[int, ...]) -> dict[str, Any]:
    """The canceller alone on the questions' voice through each room: dB removed and CPU per second."""
    voice = np.concatenate([resample(q.samples, q.rate, PIPELINE_RATE) for q in questions]).astype(np.float32)
    seconds = len(voice) / PIPELINE_RATE
    erle: dict[str, float] = {}
    cpu: list[float] = []
    for delay in delays_ms:
        room = Room(delay_ms=delay)
        mic = room.echo_of(voice) + room.noise(len(voice))
        canceller = EchoCanceller()
        started = time.process_time()
        out = _cancel_streamed(canceller, voice, mic)
        cpu.append((time.process_time() - started) / seconds)
        settled = min(int(SETTLED_S * PIPELINE_RATE), len(out) // 2)  # short clips: their second half
        erle[f"{delay}ms"] = round(_db(mic[settled:len(out)]) - _db(out[settled:]), 1)
    four = [EchoCanceller() for _ in range(4)]
    room = Room(delay_ms=delays_ms[0])
    mic = room.echo_of(voice) + room.noise(len(voice))
    started = time.process_time()
    for canceller in four:
        _cancel_streamed(canceller, voice, mic)
    return {"audio_s": round(seconds, 2), "erle_db": erle,
            "cpu_s_per_audio_s": round(float(np.median(cpu)), 4),
            "four_sessions_cpu_s_per_audio_s": round((time.process_time() - started) / seconds, 4)}


def _cancel_streamed(canceller: EchoCanceller, played: np.ndarray, mic: np.ndarray) -> np.ndarray:
    out = []
    for start in range(0, len(mic), 320):  # 20 ms appends, the reply handed over 100 ms at a time
        if start % 1600 == 0:
            canceller.played(played[start:start + 1600])
        out.append(canceller.cancel(mic[start:start + 320]))
    return np.concatenate(out)


def _db(samples: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(samples.astype(np.float64) ** 2) + 1e-15))


async def run(target: Target, config: EchoConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    questions = audio.load_questions(config.questions_dir, config.questions)
    samples: list[dict[str, Any]] = []
    before, started = _canceller_counters(target), time.monotonic()
    with contextlib.ExitStack() as neighbours:
        spinning = [neighbours.enter_context(busy_core(NEIGHBOUR_LIMIT_S)) for _ in range(config.busy_neighbours)]
        for repeat in range(config.repeat):
            for question in questions:
                for delay in config.delays_ms:
                    room = Room(delay_ms=delay, rate=question.rate)
                    for mode in MODES:
                        run_, received_at = await speak(target, question, room, config, cancel=mode == "on",
                                                         instructions=config.instructions)
                        samples.append({"kind": "echo", "repeat": repeat, "question": question.name,
                                        "delay_ms": delay, "mode": mode, **_outcome(run_, received_at, question)})
    summary: dict[str, Any] = {"neighbours": [neighbour.report for neighbour in spinning]}
    summary["server_one_at_a_time"] = _server_cost(before, _canceller_counters(target), time.monotonic() - started)
    for mode in MODES:
        runs = [s for s in samples if s["kind"] == "echo" and s["mode"] == mode]
        summary[mode] = {"trials": len(runs), "answered": sum(s["answered"] for s in runs),
                         "self_interruptions": sum(s["self_interruptions"] for s in runs),
                         "runs_with_self_interruption": sum(bool(s["self_interruptions"]) for s in runs),
                         "request_went_on": sum(s["request_went_on"] for s in runs),
                         "self_interruption_ms_into_answer": summarize(
                             [float(ms) for s in runs for ms in s["self_interruption_ms_into_answer"]]),
                         "echo_turns": sum(s["echo_turns"] for s in runs),
                         "extra_responses": sum(s["extra_responses"] for s in runs)}
    barge: dict[str, list[float]] = {"with_echo": [], "without_echo": []}
    for index, question in enumerate(questions):
        interruption = questions[(index + 1) % len(questions)]
        for label, gain in (("with_echo", 0.5), ("without_echo", 0.0)):
            room = Room(delay_ms=config.delays_ms[len(config.delays_ms) // 2], gain=gain, rate=question.rate)
            result = await _barge_in(target, question, interruption, room, config)
            samples.append({"kind": "barge_in", "question": question.name, "echo": label, **result})
            if result["heard"]:
                barge[label].append(result["speech_to_speech_started_ms"])
    summary["barge_in"] = {label: summarize(values) for label, values in barge.items()}
    trials = [s for s in samples if s["kind"] == "barge_in"]
    summary["barge_in"]["played_out"] = sum(s["played_out"] for s in trials)
    summary["barge_in"]["not_heard"] = sum(not s["played_out"] and not s["heard"] for s in trials)
    with_echo, without = (summary["barge_in"][k].get("p50") for k in ("with_echo", "without_echo"))
    summary["barge_in"]["p50_ratio"] = round(with_echo / without, 2) if with_echo and without else None
    summary["at_once"], at_once = await _at_once(target, questions, config)
    samples += at_once
    summary["offline"] = offline_figures(questions, config.delays_ms)
    recorded = {**asdict(config), "questions": [q.name for q in questions],
                "questions_dir": str(config.questions_dir or audio.DEFAULT_QUESTIONS_DIR)}
    return summary, samples, recorded
