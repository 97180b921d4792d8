"""Prometheus metrics of one server (``GET /metrics``): stage timings, sessions, pool usage, errors.

Each app gets its own registry, so several servers in one process (tests,
benches) do not share counters. Stage timings are observed when a response
finishes, from the same monotonic marks the timings extension reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from speech_to_speech.pipeline.messages.turn_taking import TurnDecision
from speech_to_speech.units.pool import PipelinePool, SlotState

# Hops of one turn inside the server, as (stage, from mark, to mark) over ResponseState.marks.
STAGE_HOPS: tuple[tuple[str, str, str], ...] = (
    ("stt", "vad_end_of_speech", "stt_done"),
    ("llm_first_token", "stt_done", "llm_first_token"),
    ("tts_first_audio", "llm_first_token", "tts_first_audio"),
    ("send", "tts_first_audio", "first_audio_sent"),
)
# From the end of the user's turn (or a response.create) to the first audio handed to the transport.
FIRST_AUDIO_STARTS = ("vad_end_of_speech", "created")
# Seconds: fine below 100 ms (the per-hop budget), coarse up to the slow CPU turns.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0,
           13.0, float("inf"))

CONTENT_TYPE = CONTENT_TYPE_LATEST
# What can happen to a session's socket (docs/sessions.md, "Resume and replay").
LIFECYCLE_EVENTS = ("detached", "resumed", "replaced", "disconnect_grace_expired", "evicted")
# What became of a write to the session store (realtime/sessions/store/writer.py).
STORE_OUTCOMES = ("ok", "dropped", "failed")


class ServerMetrics:
    def __init__(self, pool: PipelinePool) -> None:
        self.pool = pool
        self.registry = CollectorRegistry()
        self.stage_seconds = Histogram(
            "s2s_stage_seconds", "Duration of one stage of a turn, server side.", ["stage"],
            buckets=BUCKETS, registry=self.registry)
        self.first_audio_seconds = Histogram(
            "s2s_first_audio_seconds", "End of the user's speech (or response.create) to the first audio sent.",
            buckets=BUCKETS, registry=self.registry)
        self.responses = Counter("s2s_responses", "Finished responses by status.", ["status"],
                                 registry=self.registry)
        self.errors = Counter("s2s_errors", "Error events sent to clients, by code.", ["code"],
                              registry=self.registry)
        self.active_sessions = Gauge("s2s_active_sessions", "Sessions holding a pipeline unit.",
                                     registry=self.registry)
        self.pool_units = Gauge("s2s_pool_units", "Pipeline units by state.", ["state"], registry=self.registry)
        self.turn_decisions = Counter(
            "s2s_turn_decisions", "Pauses judged by the turn detector, by outcome (finished, unfinished, "
            "timed_out, disputed, no_answer).", ["detector", "outcome"], registry=self.registry)
        self.replies_taken_back = Counter(
            "s2s_replies_taken_back", "Replies withdrawn because the user went on with the request right after "
            "the turn ended (--take_back_within_ms).", registry=self.registry)
        self.turn_decision_seconds = Histogram(
            "s2s_turn_decision_seconds", "Time the turn detector took to judge a pause.",
            buckets=BUCKETS, registry=self.registry)
        self.session_lifecycle = Counter(
            "s2s_session_lifecycle", "Sessions that lost their socket (detached), were resumed, had a socket "
            "replaced, expired after their grace or were evicted for a new client.", ["event"],
            registry=self.registry)
        self.detached_sessions = Gauge("s2s_detached_sessions", "Sessions waiting for a resume, unit held.",
                                       registry=self.registry)
        for event in LIFECYCLE_EVENTS:
            self.session_lifecycle.labels(event)
        self.store_writes = Counter(
            "s2s_session_store_writes", "Writes to the session store (--session_store redis): ok, dropped (the "
            "queue was full: Redis slow or down) or failed (Redis refused or timed out).", ["outcome"],
            registry=self.registry)
        for outcome in STORE_OUTCOMES:
            self.store_writes.labels(outcome)
        self.echo_cancelled_audio = Counter(
            "s2s_echo_cancelled_audio_seconds", "Microphone audio the server's echo cancellers took the "
            "assistant's voice out of (--echo_cancellation server, or the session's extension).",
            registry=self.registry)
        self.echo_cancellation_cpu = Counter(
            "s2s_echo_cancellation_cpu_seconds", "CPU time the server's echo cancellers took for that audio.",
            registry=self.registry)

    def response_finished(self, status: str, marks: Mapping[str, float]) -> None:
        self.responses.labels(status).inc()
        for stage, start, end in STAGE_HOPS:
            if marks.get(start) and marks.get(end):
                self.stage_seconds.labels(stage).observe(max(0.0, marks[end] - marks[start]))
        start_mark = next((marks[name] for name in FIRST_AUDIO_STARTS if marks.get(name)), None)
        if start_mark is not None and marks.get("first_audio_sent"):
            self.first_audio_seconds.observe(max(0.0, marks["first_audio_sent"] - start_mark))

    def turn_decided(self, decision: TurnDecision) -> None:
        self.turn_decisions.labels(decision.detector, decision.outcome).inc()
        if decision.inference_ms:
            self.turn_decision_seconds.observe(decision.inference_ms / 1000.0)

    def reply_taken_back(self) -> None:
        self.replies_taken_back.inc()

    def session_event(self, event: str, detached_change: int = 0) -> None:
        """A session detached, was resumed, … (LIFECYCLE_EVENTS); ``detached_change`` moves the gauge."""
        self.session_lifecycle.labels(event).inc()
        if detached_change:
            self.detached_sessions.inc(detached_change)

    def echo_cancelled(self, audio_s: float, cpu_s: float) -> None:
        self.echo_cancelled_audio.inc(audio_s)
        self.echo_cancellation_cpu.inc(cpu_s)

    def store_wrote(self, outcome: str, count: int) -> None:
        self.store_writes.labels(outcome).inc(count)

    def event_sent(self, event: Mapping[str, Any]) -> None:
        if event.get("type") == "error":
            self.errors.labels(str((event.get("error") or {}).get("code") or "unknown")).inc()

    def render(self) -> bytes:
        """The exposition text, with the pool gauges read now."""
        counts = dict.fromkeys(get_args(SlotState), 0)
        for slot in self.pool.status():
            counts[slot.state] += 1
        for state, count in counts.items():
            self.pool_units.labels(state).set(count)
        self.active_sessions.set(counts["busy"])  # a session holds exactly one unit
        return generate_latest(self.registry)
