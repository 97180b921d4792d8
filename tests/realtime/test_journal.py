"""The replay journal answers a resume completely or says it cannot: never an event twice, never a silent skip.

A state machine drives a :class:`MemoryJournal` under small byte and age
bounds with appends, acks, clock steps and reads, against a model that
remembers every event ever appended. A client is modelled too: it resumes
from the last seq it holds, takes what the journal returns, and must end up
with each event at most once and in order, with a gap always announced.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from speech_to_speech.realtime.connection.frames import Frame
from speech_to_speech.realtime.sessions.journal import MemoryJournal

MAX_BYTES = 400
TTL_S = 10.0


def _frame(seq: int, pad: int) -> Frame:
    return Frame(f'{{"seq":{seq},"pad":"{"x" * pad}"}}', "test.event", seq)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class JournalMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.journal = MemoryJournal(MAX_BYTES, TTL_S, clock=self.clock)
        self.appended: list[int] = []  # every seq appended, in order
        self.acked = 0
        self.client_has: list[int] = []  # what a resuming client has received, in order

    @rule(pad=st.integers(0, 150), skip=st.integers(1, 3))
    def append(self, pad: int, skip: int) -> None:
        seq = (self.appended[-1] if self.appended else 0) + skip
        self.journal.append(seq, _frame(seq, pad))
        self.appended.append(seq)

    @rule(seconds=st.floats(0.0, 6.0))
    def time_passes(self, seconds: float) -> None:
        self.clock.now += seconds

    @precondition(lambda self: self.appended)
    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        seq = data.draw(st.sampled_from([0, *self.appended]))
        self.journal.ack(seq)
        self.acked = max(self.acked, seq)

    @rule(data=st.data())
    def read_after(self, data: st.DataObject) -> None:
        cursor = data.draw(st.integers(0, (self.appended[-1] if self.appended else 0) + 2))
        replay = self.journal.after(cursor)
        seqs = [frame.seq for frame in replay.frames]
        wanted = [seq for seq in self.appended if seq > cursor]
        assert seqs == sorted(set(seqs)), "out of order or twice"
        assert all(seq in wanted for seq in seqs), "an event that was never appended after the cursor"
        assert seqs == wanted[len(wanted) - len(seqs):], "not the newest events without a hole"
        if replay.complete:
            assert seqs == wanted, "complete, yet events are missing"
        else:
            assert seqs != wanted, "a gap reported where there is none"
        if cursor < self.acked and any(cursor < seq <= self.acked for seq in self.appended):
            assert not replay.complete, "acked events are gone: reading them again is a gap"

    @rule()
    def client_resumes(self) -> None:
        cursor = self.client_has[-1] if self.client_has else 0
        replay = self.journal.after(cursor)
        got = [frame.seq for frame in replay.frames]
        assert got == [seq for seq in self.appended if seq > cursor] or not replay.complete
        self.client_has.extend(got)
        assert self.client_has == sorted(set(self.client_has)), "the client got an event twice"

    @invariant()
    def bounded(self) -> None:
        assert self.journal.held_bytes <= MAX_BYTES
        held = self.journal.after(0).frames  # a read drops what aged out first
        assert self.journal.held_bytes == sum(f.size for f in held)


TestJournal = JournalMachine.TestCase
TestJournal.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


@given(st.lists(st.integers(0, 100), min_size=1, max_size=30))
def test_a_journal_within_its_bounds_replays_everything_after_any_cursor(pads: list[int]) -> None:
    journal = MemoryJournal(max_bytes=10_000, ttl_s=60.0, clock=Clock())
    for seq, pad in enumerate(pads, start=1):
        journal.append(seq, _frame(seq, pad))
    for cursor in range(len(pads) + 1):
        replay = journal.after(cursor)
        assert replay.complete
        assert [f.seq for f in replay.frames] == list(range(cursor + 1, len(pads) + 1))


def test_seqs_must_increase() -> None:
    journal = MemoryJournal()
    journal.append(3, _frame(3, 0))
    for seq in (3, 2):
        try:
            journal.append(seq, _frame(seq, 0))
        except ValueError:
            continue
        raise AssertionError(f"seq {seq} after 3 was taken")


def test_old_events_age_out_and_leave_a_gap() -> None:
    clock = Clock()
    journal = MemoryJournal(max_bytes=10_000, ttl_s=5.0, clock=clock)
    journal.append(1, _frame(1, 0))
    clock.now = 4.0
    journal.append(2, _frame(2, 0))
    clock.now = 5.5
    replay = journal.after(0)
    assert (replay.complete, [f.seq for f in replay.frames]) == (False, [2])
    assert journal.after(1).complete
