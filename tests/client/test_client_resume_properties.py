"""Properties of reconnect and resume, driven through ``connect=`` with an in-memory journal server.

Whatever the cuts and however far back a server replays, readers get every
journaled event exactly once, in order, and one ConnectionResumed per resume.
(The real server replays exactly what was asked; tests/client/test_realtime_client.py
covers it over loopback. This one explores cut positions and over-long replays.)
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import deque

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
            self.server.resumed_from.append(event["last_received_server_event_seq"])
            frames, self.drop = self.server.segment(event["last_received_server_event_seq"])
            self.frames.extend(frames)

    async def recv(self) -> str:
        if self.frames:
            await asyncio.sleep(0)
            return self.frames.popleft()
        if self.drop:
            raise LinkClosed()
        await self._forever
        raise LinkClosed(1000)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if not self._forever.done():
            self._forever.set_result(None)

    def abort(self) -> None:
        pass


class JournalServer:
    """Journals events 1..total (the last one ends the session); drops each connection after ``cuts``."""

    def __init__(self, total: int, cuts: list[int], rewinds: list[int]) -> None:
        self.total, self.cuts, self.rewinds = total, deque(cuts), deque(rewinds)
        self.resumed_from: list[int] = []
        self.generation = 1

    def frame(self, seq: int) -> str:
        if seq == 1:
            return json.dumps({"type": "session.created", "event_id": "e1", "server_event_seq": 1,
                               "session_id": "s", "resume_token": "rt_1",
                               "session": {"id": "s", "capabilities": {"supports_session_resume": True}}})
        kind = "session.expired" if seq == self.total else "test.event"
        return json.dumps({"type": kind, "event_id": f"e{seq}", "server_event_seq": seq, "session_id": "s"})

    def segment(self, last: int) -> tuple[list[str], bool]:
        """What a resume from ``last`` gets: session.resumed, a replay (maybe rewound), events up to the next cut."""
        self.generation += 1
        start = max(2, last + 1 - (self.rewinds.popleft() if self.rewinds else 0))
        end = self.cuts.popleft() if self.cuts else self.total
        resumed = json.dumps({"type": "session.resumed", "session_id": "s", "attachment_generation": self.generation,
                              "resume_token": f"rt_{self.generation}"})
        return [resumed, *(self.frame(seq) for seq in range(start, max(start, end) + 1))], end < self.total

    async def connect(self, url: str) -> Link:
        if "autostart=0" in url:
            return JournalLink(self, [], drop=False)
        end = self.cuts.popleft() if self.cuts else self.total
        return JournalLink(self, [self.frame(seq) for seq in range(1, end + 1)], drop=end < self.total)


@st.composite
def schedules(draw: st.DrawFn) -> tuple[int, list[int], list[int]]:
    total = draw(st.integers(3, 40))
    cuts = sorted(draw(st.sets(st.integers(1, total - 1), max_size=5)))
    rewinds = draw(st.lists(st.integers(0, 10), min_size=len(cuts), max_size=len(cuts)))
    return total, cuts, rewinds


@settings(max_examples=60, deadline=None)
@given(schedules())
def test_every_event_reaches_readers_once_in_order_whatever_the_cuts_and_replays(
        schedule: tuple[int, list[int], list[int]]) -> None:
    total, cuts, rewinds = schedule

    async def scenario() -> tuple[list[int], int, int]:
        server = JournalServer(total, cuts, rewinds)
        client = RealtimeClient("ws://journal/v1/realtime", connect=server.connect, reconnect=AT_ONCE,
                                event_ack_interval_s=None, heartbeat_interval_s=None, close_timeout_s=0.1)
        events = client.events()
        async with client:
            seen = [event async for event in events]
        resumed = sum(isinstance(event, ConnectionResumed) for event in seen)
        return [e.server_event_seq for e in seen if e.server_event_seq is not None], resumed, client.resumes

    seqs, resumed, resumes = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert seqs == list(range(1, total + 1))
    assert resumed == resumes == len(cuts)


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
