"""``bench resume --failover``: sessions whose server is killed mid-answer, resumed on the other replica.

Two ``serve`` processes (fast scripted handlers) share one redis-server. A
relay in front of them plays the load balancer: a new connection goes to
the replica the run chose for the session, or to the other where that one
is gone. Each session asks a first question and hears its whole answer, then
asks a second; once a seeded random number of the second answer's events
has reached the client, the bench kills the replica with SIGKILL.
``RealtimeClient`` reconnects through the relay, lands on the survivor and
resumes from Redis. Per session:

- whether it resumed, and the time from the kill to ``ConnectionResumed``
  and to the first event after it;
- the events the consumer saw: each ``server_event_seq`` once, none missing
  (``events_lost`` counts the holes), duplicates the client dropped;
- how the cut response ended (``failed`` with ``server_lost``, or
  ``completed`` where the dead server had written its end), and whether
  what came of it is the start of the same answer uncut;
- whether the next question's LLM request held every earlier turn (the
  scripted reply repeats the request's whole history).

With ``death_ms`` (``--death-ms``) the replica dies as a server holding its
models does, and is resumed from as the issue's by-hand path did: it is
frozen (SIGSTOP: its connections stay open, it answers nobody), the
client's connection is cut at once and new connections go to the other
replica, and SIGKILL follows ``death_ms`` later (a real ``serve`` killed
mid-answer took 28-44 ms to die; a frozen or cut-off one takes the lease).

The killed replica is started again while the session goes on, so every
session begins with two replicas up. Then one session lives through a
Redis outage (``redis_down``): answered while Redis is stopped, with what
``/ready`` and ``/metrics`` say meanwhile; once a Redis with nothing in it
is back, its replica is killed mid-answer and the session resumed on the
other. Last, the journal's cost per event in memory and mirrored to Redis
(``journal_cost``, see ``emit_rate.measure_store_emit``).
"""

from __future__ import annotations

import asyncio
import random
import re
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from speech_to_speech.bench.emit_rate import measure_emit, measure_store_emit
from speech_to_speech.bench.stats import summarize
from speech_to_speech.client.events import ConnectionResumed, RealtimeEvent
from speech_to_speech.client.realtime_client import RealtimeClient
from speech_to_speech.client.reconnect import ReconnectPolicy
from speech_to_speech.protocol import error_codes
from speech_to_speech.testing.cutting_relay import CuttingRelay
from speech_to_speech.testing.redis_server import RedisServer
from speech_to_speech.testing.serve_process import ServeProcess

QUESTIONS = ("What is the capital of France?", "Tell me about Paris.", "And what about Lyon?")
# The scripted reply: the whole request it was given, then enough clauses to be cut anywhere.
REPLY = ("You asked me this: {history}. Paris is the capital of France. It stands on the Seine, in the "
         "north of the country. The Louvre holds the Mona Lisa, and the Eiffel Tower was built for a fair.")
TRANSCRIPT_DELTA = "response.output_audio_transcript.delta"
# After Redis is back, long enough for a heartbeat (a third of the 3 s lease) to find the lease gone.
REWRITE_WAIT_S = 1.5


@dataclass(frozen=True)
class FailoverConfig:
    sessions: int = 30
    seed: int = 1
    timeout_s: float = 30.0
    emit_events: int = 20000  # per kind, for the journal's cost in memory and in Redis
    reconnect: dict[str, Any] = field(default_factory=lambda: asdict(ReconnectPolicy()))
    death_ms: float | None = None  # None: SIGKILL, the client resuming once its connection closed


@dataclass
class _Seen:
    """What the consumer of one session saw: every seq once, the duplicates, when each resume came."""

    seqs: set[int] = field(default_factory=set)
    duplicates: int = 0
    ends_again: int = 0  # a response.done for a response that had ended already
    resumed_at: list[float] = field(default_factory=list)
    after_resume: list[RealtimeEvent] = field(default_factory=list)

    def holes(self) -> int:
        """Seqs never seen between the first and the last seen (session.created is read before the stream)."""
        return max(self.seqs) - min(self.seqs) + 1 - len(self.seqs) if self.seqs else 0


async def _answer(client: RealtimeClient, events: Any, seen: _Seen, question: str,
                  on_event: Any = None) -> list[RealtimeEvent]:
    """Ask ``question``; the new events of its answer, from response.created to response.done."""
    await client.send({"type": "conversation.item.create", "item": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": question}]}})
    await client.create_response()
    answer: list[RealtimeEvent] = []
    async for event in events:
        if isinstance(event, ConnectionResumed):
            seen.resumed_at.append(event.received_at)
        if event.server_event_seq is None or isinstance(event, ConnectionResumed):
            if event.server_event_seq is not None:
                seen.seqs.add(event.server_event_seq)
            continue
        if event.server_event_seq in seen.seqs:
            seen.duplicates += 1
            continue
        seen.seqs.add(event.server_event_seq)
        if seen.resumed_at:
            seen.after_resume.append(event)
        if event.type == "response.done" and not answer:
            seen.ends_again += 1
            continue
        if answer or event.type == "response.created":
            answer.append(event)
            if on_event is not None:
                on_event(len(answer))
        if event.type == "response.done":
            return answer
    raise RuntimeError("the session ended before response.done")


def _transcript(events: list[RealtimeEvent]) -> str:
    return "".join(e.text or "" for e in events if e.type == TRANSCRIPT_DELTA)


def _audio(events: list[RealtimeEvent]) -> bytes:
    return b"".join(e.audio for e in events)


def _ending(done: RealtimeEvent) -> tuple[str, str | None]:
    response = done.raw.get("response") or {}
    error = (response.get("status_details") or {}).get("error") or {}
    return str(response.get("status")), error.get("code")


def _holds_in_order(transcript: str, parts: list[str]) -> bool:
    """Whether a reply (that repeats its request's history) holds each of ``parts``, in order."""
    position = 0
    for part in parts:
        position = transcript.find(part, position)
        if position < 0:
            return False
    return True


def _store_writes(replica: ServeProcess) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r's2s_session_store_writes_total\{outcome="(\w+)"\} (\S+)', replica.metrics())}


def _ready(replica: ServeProcess) -> dict[str, Any]:
    answer = httpx.get(f"{replica.http_url}/ready", timeout=5)
    return {"status": answer.status_code, "reasons": answer.json().get("reasons", [])}


async def _ready_again_s(replica: ServeProcess, timeout_s: float = 30.0) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if (await asyncio.to_thread(_ready, replica))["status"] == 200:
            return round(time.monotonic() - started, 2)
        await asyncio.sleep(0.05)
    return None


class Failover:
    """Two replicas on one Redis behind a relay; sessions run one at a time, each killing its replica once."""

    def __init__(self, replicas: tuple[ServeProcess, ServeProcess], relay: CuttingRelay,
                 config: FailoverConfig) -> None:
        self.replicas = replicas
        self.relay = relay
        self.config = config
        self._restart: threading.Thread | None = None
        self._death: threading.Timer | None = None
        self.restart_s: list[float] = []

    def _client(self) -> RealtimeClient:
        return RealtimeClient(self.relay.ws_url, reconnect=ReconnectPolicy(**self.config.reconnect),
                              heartbeat_interval_s=None)

    async def reference(self) -> list[RealtimeEvent]:
        """The second answer uncut, on the first replica: what a cut one must be the start of."""
        self.relay.prefer = 0
        seen = _Seen()
        async with self._client() as client:
            events = client.events()
            async with asyncio.timeout(self.config.timeout_s):
                await _answer(client, events, seen, QUESTIONS[0])
                return await _answer(client, events, seen, QUESTIONS[1])

    async def session(self, owner: int, kill_after: int, reference: list[RealtimeEvent]) -> dict[str, Any]:
        """One session on ``owner``, killed after ``kill_after`` events of the second answer reached the client."""
        self._wait_restarted()
        self.relay.prefer = owner
        seen = _Seen()
        killed_at: list[float] = []

        def kill_when(count: int) -> None:  # called as each event of the second answer arrives
            if count == kill_after and not killed_at:
                killed_at.append(time.monotonic())
                self._kill(owner)

        sample: dict[str, Any] = {"owner": owner, "kill_after_answer_events": kill_after}
        async with self._client() as client:
            events = client.events()
            async with asyncio.timeout(self.config.timeout_s):
                first = await _answer(client, events, seen, QUESTIONS[0])
                cut = await _answer(client, events, seen, QUESTIONS[1], kill_when)
                if killed_at:
                    self._restart_later(owner)
                follow = await _answer(client, events, seen, QUESTIONS[2])
            sample.update(resumes=client.resumes, client_dropped_duplicates=client.duplicates_dropped)
        status, code = _ending(cut[-1])
        kill = killed_at[0] if killed_at else None
        sample.update(
            resumed=client.resumes == 1 and bool(seen.resumed_at),
            resumed_on=self.relay.routed[-1] if self.relay.routed else None,
            kill_to_resumed_ms=None if kill is None or not seen.resumed_at else
            round((seen.resumed_at[0] - kill) * 1000, 2),
            kill_to_first_event_ms=None if kill is None or not seen.after_resume else
            round((seen.after_resume[0].received_at - kill) * 1000, 2),
            events_after_resume_to_done=len({e.server_event_seq for e in seen.after_resume}
                                            & {e.server_event_seq for e in cut}),
            duplicates=seen.duplicates, responses_ended_twice=seen.ends_again, events_lost=seen.holes(),
            cut_status=status, cut_code=code,
            cut_is_start_of_answer=self._is_start(cut, reference),
            follow_up_status=_ending(follow[-1])[0],
            follow_up_holds_history=_holds_in_order(_transcript(follow), [
                f"user: {QUESTIONS[0]}", f"assistant: {_transcript(first)[:40]}", f"user: {QUESTIONS[1]}",
                f"user: {QUESTIONS[2]}"]))
        return sample

    async def store_down(self, redis: RedisServer) -> dict[str, Any]:
        """One session through a Redis outage: answered while it is down (what /ready and /metrics say),
        then, once a Redis with nothing in it is back, its replica killed mid-answer and the session
        resumed on the other from what was written again."""
        self._wait_restarted()
        self.relay.prefer, replica = 0, self.replicas[0]
        seen = _Seen()
        killed: list[float] = []

        def kill_when(count: int) -> None:
            if count == 3 and not killed:
                killed.append(time.monotonic())
                replica.kill()

        figures: dict[str, Any] = {}
        async with self._client() as client:
            events = client.events()
            async with asyncio.timeout(self.config.timeout_s * 3):
                await _answer(client, events, seen, QUESTIONS[0])
                redis.stop()
                down = [await _answer(client, events, seen, q) for q in QUESTIONS[1:]]
                figures["answers_while_down"] = [_ending(answer[-1])[0] for answer in down]
                figures["ready_while_down"] = await asyncio.to_thread(_ready, replica)
                figures["store_writes_while_down"] = await asyncio.to_thread(_store_writes, replica)
                redis.start()  # empty: it kept nothing on disk
                figures["ready_again_after_s"] = await _ready_again_s(replica)
                await asyncio.sleep(REWRITE_WAIT_S)
                cut = await _answer(client, events, seen, QUESTIONS[0], kill_when)
                self._restart_later(0)
                follow = await _answer(client, events, seen, QUESTIONS[1])
            resumed = client.resumes == 1 and bool(seen.resumed_at)
        figures.update(
            failover_after_restart_resumed=resumed, cut_status=_ending(cut[-1])[0],
            kill_to_resumed_ms=round((seen.resumed_at[0] - killed[0]) * 1000, 2) if resumed and killed else None,
            events_lost=seen.holes(), duplicates=seen.duplicates, follow_up_status=_ending(follow[-1])[0],
            follow_up_holds_history=_holds_in_order(_transcript(follow), [
                f"user: {q}" for q in (*QUESTIONS, QUESTIONS[0], QUESTIONS[1])]))
        return figures

    def _kill(self, index: int) -> None:
        replica = self.replicas[index]
        if self.config.death_ms is None:
            replica.kill()
            return
        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)  # dying: no answer, its connections still open
        self.relay.prefer = 1 - index
        self.relay.cut_now()
        self._death = threading.Timer(self.config.death_ms / 1000, replica.kill)
        self._death.start()

    @staticmethod
    def _is_start(cut: list[RealtimeEvent], reference: list[RealtimeEvent]) -> bool:
        """What the cut response said is the start of the uncut one: its events (but the end), audio, words."""
        said = cut[:-1]
        return ([e.type for e in said] == [e.type for e in reference[:len(said)]]
                and _audio(reference).startswith(_audio(said))
                and _transcript(reference).startswith(_transcript(said)))

    def _restart_later(self, index: int) -> None:
        def restart() -> None:
            if self._death is not None:
                self._death.join()  # the port is free once it is dead
            started = time.monotonic()
            self.replicas[index].start()
            self.restart_s.append(round(time.monotonic() - started, 2))

        self._restart = threading.Thread(target=restart, name=f"restart-replica-{index}", daemon=True)
        self._restart.start()

    def _wait_restarted(self) -> None:
        if self._restart is not None:
            self._restart.join(timeout=90)
            self._restart = None


async def run(replicas: tuple[ServeProcess, ServeProcess], redis: RedisServer,
              config: FailoverConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    rng = random.Random(config.seed)
    with CuttingRelay([r.ws_url.removesuffix("/v1/realtime") for r in replicas]).running() as relay:
        failover = Failover(replicas, relay, config)
        reference = await failover.reference()
        samples: list[dict[str, Any]] = []
        for index in range(config.sessions):
            kill_after = rng.randrange(1, len(reference))  # after response.created, before response.done
            try:
                sample = await failover.session(index % 2, kill_after, reference)
            except Exception as error:  # noqa: BLE001 - a failed session is a figure, not the end of the run
                sample = {"resumed": False, "failed": f"{type(error).__name__}: {error}"}
            samples.append({"session": index, **sample})
        try:
            outage = await failover.store_down(redis)
        except Exception as error:  # noqa: BLE001 - reported, as a failed session is
            outage = {"failed": f"{type(error).__name__}: {error}"}
        failover._wait_restarted()
    figures = summary(samples, reference, failover.restart_s)
    figures["redis_down"] = outage
    figures["journal_cost"] = {"memory": measure_emit(config.emit_events),
                               "redis": await measure_store_emit(redis.url, config.emit_events)}
    return figures, samples, asdict(config)


def summary(samples: list[dict[str, Any]], reference: list[RealtimeEvent],
            restart_s: list[float]) -> dict[str, Any]:
    def count(predicate: Any) -> int:
        return sum(1 for s in samples if predicate(s))

    def total(key: str) -> int:
        return sum(int(s.get(key) or 0) for s in samples)

    replayed = summarize(s.get("events_after_resume_to_done") for s in samples)
    return {
        "sessions": len(samples),
        "resumes_attempted": len(samples),
        "resumes_succeeded": count(lambda s: s.get("resumed")),
        "resumed_on_the_other_replica": count(lambda s: s.get("resumed") and s.get("resumed_on") != s.get("owner")),
        "failed": count(lambda s: "failed" in s),
        "kill_to_resumed_ms": summarize(s.get("kill_to_resumed_ms") for s in samples),
        "kill_to_first_event_ms": summarize(s.get("kill_to_first_event_ms") for s in samples),
        "events_after_resume_to_done": {k: replayed[k] for k in ("n", "min", "mean", "max")},
        "events_lost": total("events_lost"),
        "duplicates_seen_by_consumer": total("duplicates"),
        "duplicates_dropped_by_client": total("client_dropped_duplicates"),
        "responses_ended_twice": total("responses_ended_twice"),
        "cut_responses_failed_server_lost": count(
            lambda s: s.get("cut_status") == "failed" and s.get("cut_code") == error_codes.SERVER_LOST),
        "cut_responses_completed_before_the_kill": count(lambda s: s.get("cut_status") == "completed"),
        "cut_responses_the_start_of_the_answer": count(lambda s: s.get("cut_is_start_of_answer")),
        "follow_ups_completed": count(lambda s: s.get("follow_up_status") == "completed"),
        "follow_ups_holding_every_earlier_turn": count(lambda s: s.get("follow_up_holds_history")),
        "reference": {"answer_events": len(reference), "audio_bytes": len(_audio(reference))},
        "replica_restart_s": summarize(restart_s),
    }
