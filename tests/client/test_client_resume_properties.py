"""Properties of reconnect and resume, driven through ``connect=`` with an in-memory journal server.

Whatever the cuts, however far back a server replays, and whatever journal
gaps it announces (``session.resync_required``, whose seq is newer than the
held events after it), readers get every event the server sent exactly once,
in the order it was first sent, and one ConnectionResumed per resume.
(The real server replays exactly what was asked; tests/client/test_realtime_client.py
covers it over loopback. This one explores cut positions and over-long replays.)
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import deque
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.client import ConnectionResumed, RealtimeClient, ReconnectPolicy
from speech_to_speech.client.link import Link, LinkClosed

AT_ONCE = ReconnectPolicy(attempts=1, initial_delay_s=0.0, max_delay_s=0.0)


class JournalLink:
    """One connection to the fake server: frames it will deliver, then a drop (or silence)."""

    def __init__(self, server: JournalServer, frames: list[str], drop: bool) -> None:
        self.server, self.frames, self.drop = server, deque(frames), drop
        self._forever: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def send(self, message: str) -> None:
        event = json.loads(message)
        if event["type"] == "session.resume":
            frames, self.drop = self.server.resume(event["last_received_server_event_seq"])
            self.frames.extend(frames)

    async def recv(self) -> str:
        if self.frames:
            await asyncio.sleep(0)
            frame = self.frames.popleft()
            self.server.delivered(frame)
            return frame
        if self.drop:
            raise LinkClosed()
        await self._forever
        raise LinkClosed(1000)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if not self._forever.done():
            self._forever.set_result(None)

    def abort(self) -> None:
        pass


@dataclass(frozen=True)
class Segment:
    """One connection's life: ``new`` events made and sent live, ``away`` made after it drops (journaled only).

    Its resume replays from ``rewind`` events before the client's cursor (a server replaying too much),
    or, with ``gap``, says session.resync_required and skips the ``gap`` oldest events the client lacks.
    """

    new: int
    away: int
    rewind: int
    gap: int


class JournalServer:
    """A journaling server in memory: the events of a plan of connections, and the order they were sent in."""

    def __init__(self, plan: list[Segment]) -> None:
        self.plan = deque(plan)
        self.journal: list[str] = []  # seq n is journal[n - 1]
        self.first_sent: list[int] = []  # each seq once, in the order a client first got it
        self.trimmed: set[int] = set()  # gone from the journal (a gap): never sent again
        self.generation = 1

    def produce(self, kind: str = "test.event") -> str:
        seq = len(self.journal) + 1
        fields = {"session_id": "s"}
        if kind == "session.created":
            fields.update(resume_token="rt_1", session={"id": "s", "capabilities": {"supports_session_resume": True}})
        self.journal.append(json.dumps({"type": kind, "event_id": f"e{seq}", "server_event_seq": seq, **fields}))
        return self.journal[-1]

    def delivered(self, frame: str) -> None:
        seq = json.loads(frame).get("server_event_seq")
        if seq is not None and seq not in self.first_sent:
            self.first_sent.append(seq)

    def _live(self, segment: Segment) -> tuple[list[str], bool]:
        frames = [self.produce() for _ in range(segment.new)]
        last = not self.plan
        if last:
            frames.append(self.produce("session.expired"))
        else:
            for _ in range(segment.away):
                self.produce()
        return frames, not last

    def resume(self, cursor: int) -> tuple[list[str], bool]:
        segment = self.plan.popleft()
        self.generation += 1
        frames = [json.dumps({"type": "session.resumed", "session_id": "s",
                              "attachment_generation": self.generation, "resume_token": f"rt_{self.generation}"})]
        held = [seq for seq in range(cursor + 1, len(self.journal) + 1) if seq not in self.trimmed]
        if segment.gap and held:
            self.trimmed.update(held[: segment.gap])
            held = held[segment.gap :]
            frames.append(self.produce("session.resync_required"))
        else:
            start = max(2, cursor + 1 - segment.rewind)
            held = [seq for seq in range(start, len(self.journal) + 1) if seq not in self.trimmed]
        frames += [self.journal[seq - 1] for seq in held]
        live, drop = self._live(segment)
        return frames + live, drop

    async def connect(self, url: str) -> Link:
        if "autostart=0" in url:
            return JournalLink(self, [], drop=False)
        created = self.produce("session.created")
        live, drop = self._live(self.plan.popleft())
        return JournalLink(self, [created, *live], drop)


segments = st.builds(Segment, new=st.integers(0, 6), away=st.integers(0, 6), rewind=st.integers(0, 8),
                     gap=st.one_of(st.just(0), st.integers(1, 4)))


@settings(max_examples=80, deadline=None)
@given(st.lists(segments, min_size=1, max_size=6))
def test_every_event_reaches_readers_once_in_the_order_it_was_first_sent(plan: list[Segment]) -> None:
    server = JournalServer(plan)

    async def scenario() -> tuple[list[int], int, RealtimeClient]:
        client = RealtimeClient("ws://journal/v1/realtime", connect=server.connect, reconnect=AT_ONCE,
                                event_ack_interval_s=None, heartbeat_interval_s=None, close_timeout_s=0.1)
        events = client.events()
        async with client:
            seen = [event async for event in events]
        resumed = sum(isinstance(event, ConnectionResumed) for event in seen)
        return [e.server_event_seq for e in seen if e.server_event_seq is not None], resumed, client

    seqs, resumed, client = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert seqs == server.first_sent  # each once, nothing the server sent skipped
    assert seqs[-1] == len(server.journal)  # to the end (session.expired)
    assert resumed == client.resumes == len(plan) - 1
    assert client.last_server_event_seq == len(server.journal)  # the resume cursor got past every gap


@given(st.integers(1, 8), st.floats(0.0, 2.0), st.floats(0.0, 8.0), st.integers(0, 2**16))
def test_backoff_doubles_within_its_bounds_and_jitters_below_each_ceiling(
        attempts: int, initial: float, extra: float, seed: int) -> None:
    policy = ReconnectPolicy(attempts=attempts, initial_delay_s=initial, max_delay_s=initial + extra)
    delays = list(policy.delays(random.Random(seed)))
    assert len(delays) == attempts
    for attempt, delay in enumerate(delays):
        ceiling = min(policy.max_delay_s, initial * 2 ** attempt)
        assert ceiling / 2 <= delay <= ceiling
    steady = list(ReconnectPolicy(attempts=attempts, initial_delay_s=initial, max_delay_s=initial + extra,
                                  jitter=False).delays())
    assert steady == sorted(steady) and steady[-1] <= policy.max_delay_s
