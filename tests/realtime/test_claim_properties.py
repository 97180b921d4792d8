"""The session gate gives back each place and each unit exactly once, whatever happens in between.

Hypothesis writes scripts of clients that pass one real :class:`SessionGate`
over a real pool of scripted units: new sessions, sockets that only resume,
take-overs (a unit, no place), in any order, and each of them then finishes,
fails, is cancelled (while it waits for a unit or while it holds one), hands
what it holds to a task of its own (a WebRTC call; that task may be cancelled
before it ever ran), or starts a session that keeps its unit after its socket
went (detached) until it expires, while other sockets come and go. After every
step no address holds more places than its limit and every unit the pool
handed out is held by exactly one owner; at the end every unit is back (idle)
and was handed back once, and every address can open its full limit again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from speech_to_speech.realtime.sessions.claim import Entry, UnitLease
from speech_to_speech.realtime.sessions.gate import Refusal, SessionGate
from speech_to_speech.testing.engine import scripted_builders, scripted_settings, wait_until
from speech_to_speech.units.pool import PipelinePool
from speech_to_speech.units.unit import PipelineUnit

UNITS = 2
PER_ADDRESS = 2
ADDRESSES = ("10.0.0.1", "10.0.0.2")
SETTINGS = scripted_settings(max_sessions_per_client=PER_ADDRESS, max_sessions_per_minute=0, admission_wait_s=0)
SETTLE_STEPS = 2000  # loop turns (of a few ms) a script step may take before the test calls it stuck

Kind = Literal["new", "resume", "take_over"]
Command = Literal["finish", "fail", "session", "move", "move_then_cancel"]


class CountingPool(PipelinePool):
    """The real pool, noting which units are out, so that a unit handed back twice is seen."""

    def __init__(self) -> None:
        super().__init__(UNITS, lambda index: PipelineUnit(index, scripted_builders(SETTINGS)))
        self.out: set[int] = set()
        self.extra_releases: list[int] = []

    def claim(self) -> PipelineUnit | None:
        unit = super().claim()
        if unit is not None:
            assert unit.index not in self.out, f"unit {unit.index} handed out twice"
            self.out.add(unit.index)
        return unit

    def release(self, unit: PipelineUnit, wait: bool = False) -> None:
        if unit.index not in self.out:
            self.extra_releases.append(unit.index)
        self.out.discard(unit.index)
        super().release(unit, wait)


class Failed(Exception):
    """What a client's handshake or offer failing looks like inside the gate's block."""


@dataclass(eq=False)
class Client:
    address: str | None
    kind: Kind
    commands: asyncio.Queue[Command] = field(default_factory=asyncio.Queue)
    phase: Literal["entering", "holding", "done"] = "entering"
    lease: UnitLease | None = None
    task: asyncio.Task[None] | None = None


@dataclass(eq=False)
class Session:
    """What LiveSession does with a unit: keep it once it runs, hand it back when it ends."""

    lease: UnitLease
    ended: bool = False

    def expire(self) -> None:
        if not self.ended:
            self.ended = True
            self.lease.release()


class World:
    def __init__(self, pool: CountingPool) -> None:
        self.pool = pool
        self.gate = SessionGate(pool, SETTINGS)
        self.clients: list[Client] = []
        self.sessions: list[Session] = []

    def open(self, address: str | None, kind: Kind) -> None:
        client = Client(address, kind)
        client.task = asyncio.create_task(self._run(client))
        self.clients.append(client)

    async def _run(self, client: Client) -> None:
        try:
            async with self.gate.session(client.address, unit=client.kind != "resume") as entry:
                if isinstance(entry, Refusal):
                    return
                client.phase = "holding"
                client.lease = entry.lease if client.kind != "resume" else None
                command = await client.commands.get()
                if command == "fail":
                    raise Failed
                if command == "session" and client.kind != "resume":
                    self.sessions.append(Session(entry.lease))
                    entry.lease.keep()  # the block ends next: the socket went, the session goes on
                if command in ("move", "move_then_cancel"):
                    self._move(client, entry.move(), cancel_at_once=command == "move_then_cancel")
                    return
        except Failed:
            pass
        finally:
            if client.task is asyncio.current_task():
                client.phase = "done"

    def _move(self, client: Client, held: Entry, cancel_at_once: bool) -> None:
        """What signalling does: the call's task holds the entry; its end closes it, even if it never ran."""
        async def call() -> None:
            with held:
                await client.commands.get()

        def ended(_: object) -> None:
            held.close()
            client.phase = "done"

        client.task = asyncio.create_task(call())
        client.task.add_done_callback(ended)
        if cancel_at_once:
            client.task.cancel()

    async def settle(self) -> None:
        """Run the loop until every client holds still: parked on a command, done, or waiting for a unit
        that is not coming (none idle or draining)."""
        for _ in range(SETTLE_STEPS):
            await asyncio.sleep(0.002)
            unit_coming = any(slot.state in ("idle", "draining") for slot in self.pool.status())
            moving = any(c.phase == "entering" for c in self.clients) and unit_coming
            if not moving and all(c.commands.empty() or c.phase == "done" for c in self.clients):
                return
        raise AssertionError("the clients never settled")

    def check(self) -> None:
        for address in ADDRESSES:
            places = sum(c.phase == "holding" and c.address == address for c in self.clients)
            assert places <= PER_ADDRESS, f"{address} holds {places} places"
        owners = [s.lease.unit.index for s in self.sessions if not s.ended]
        owners += [c.lease.unit.index for c in self.clients
                   if c.phase == "holding" and c.lease is not None and not c.lease.kept]
        assert sorted(owners) == sorted(self.pool.out), f"owned {owners}, out {sorted(self.pool.out)}"
        assert len(self.pool.out) <= UNITS
        assert not self.pool.extra_releases, f"units handed back twice: {self.pool.extra_releases}"


Step = tuple[str, int, int]  # (what, which address or client or session, a choice)


async def play(pool: CountingPool, steps: list[Step]) -> None:
    world = World(pool)
    commands: tuple[Command, ...] = ("finish", "fail", "session", "move", "move_then_cancel")
    kinds: tuple[Kind, ...] = ("new", "resume", "take_over")
    for what, which, choice in steps:
        holding = [c for c in world.clients if c.phase == "holding"]
        if what == "open":
            kind = kinds[choice % len(kinds)]
            world.open(None if kind == "take_over" else ADDRESSES[which % len(ADDRESSES)], kind)
        elif what == "command" and holding:
            holding[which % len(holding)].commands.put_nowait(commands[choice % len(commands)])
        elif what == "cancel" and world.clients:
            task = world.clients[which % len(world.clients)].task
            assert task is not None
            task.cancel()
        elif what == "expire" and world.sessions:
            world.sessions[which % len(world.sessions)].expire()
        await world.settle()
        world.check()
    for client in world.clients:  # the end: every socket and call goes, every session expires
        assert client.task is not None
        client.task.cancel()
    for session in world.sessions:
        session.expire()
    await world.settle()
    world.check()
    assert all(c.phase == "done" for c in world.clients)
    assert not pool.out, f"units never handed back: {sorted(pool.out)}"
    for address in ADDRESSES:  # no place left taken: the address can fill its limit again, and no more
        entries = [await world.gate.enter(address, unit=False) for _ in range(PER_ADDRESS + 1)]
        assert all(isinstance(entry, Entry) for entry in entries[:PER_ADDRESS])
        assert isinstance(entries[-1], Refusal) and entries[-1].status == 429
        for entry in entries[:PER_ADDRESS]:
            assert isinstance(entry, Entry)
            entry.close()


@pytest.fixture(scope="module")
def pool() -> Iterator[CountingPool]:
    counting = CountingPool()
    yield counting
    counting.close()


steps = st.lists(st.tuples(st.sampled_from(["open", "open", "command", "command", "cancel", "expire"]),
                           st.integers(0, 7), st.integers(0, 7)), max_size=24)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=steps)
# Two sessions of one address, one handed to a call that then ends (its block and its task's end both
# close it), then two sockets of that address that only resume: the limit must still hold.
@example(script=[("open", 0, 0), ("open", 0, 0), ("command", 0, 3), ("command", 0, 0), ("open", 0, 1),
                 ("open", 0, 1)])
def test_places_and_units_are_given_back_exactly_once(pool: CountingPool, script: list[Step]) -> None:
    asyncio.run(play(pool, script))
    wait_until(lambda: all(slot.state == "idle" for slot in pool.status()), what="every unit idle again")


def test_a_refused_entry_holds_nothing_and_a_second_close_gives_nothing_back(pool: CountingPool) -> None:
    """Every unit taken: the next entry is refused after the wait and keeps no place; an entry closed
    twice frees its place once (its address still cannot go over its limit)."""
    async def full() -> None:
        gate = SessionGate(pool, SETTINGS)
        held = [await gate.enter(ADDRESSES[0]), await gate.enter(ADDRESSES[0])]
        refused = await gate.enter(ADDRESSES[1])
        assert isinstance(refused, Refusal) and refused.code == "session_limit_reached"
        first, second = held
        assert isinstance(first, Entry) and isinstance(second, Entry)
        first.close()
        first.close()
        assert pool.out == {second.lease.unit.index}
        again = [await gate.enter(ADDRESSES[0], unit=False) for _ in range(2)]
        assert isinstance(again[0], Entry) and isinstance(again[1], Refusal) and again[1].status == 429
        again[0].close()
        second.close()
        others = [await gate.enter(ADDRESSES[1], unit=False) for _ in range(PER_ADDRESS)]
        assert all(isinstance(entry, Entry) for entry in others)  # the refused entry kept no place
        for entry in others:
            assert isinstance(entry, Entry)
            entry.close()

    asyncio.run(full())
    assert not pool.out and not pool.extra_releases
    wait_until(lambda: all(slot.state == "idle" for slot in pool.status()), what="every unit idle again")
