"""The CPU gate: urgent work shares the free CPUs, background steps get what is left or wait for it."""

from __future__ import annotations

import threading
import time

from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.cpu import gate as cpu_gate
from speech_to_speech.cpu.gate import CpuGate


def test_alone_a_job_gets_the_threads_it_wants_up_to_the_free_cpus() -> None:
    gate = CpuGate(lambda: 2)
    assert gate.background_threads(1) == 1 and gate.background_threads(4) == 2
    with gate.urgent(2):
        assert gate.urgent_threads(2) == 2 and gate.urgent_threads(8) == 2


def test_urgent_jobs_share_the_free_cpus() -> None:
    gate = CpuGate(lambda: 4)
    with gate.urgent(2), gate.urgent(2):
        assert gate.urgent_threads(4) == 2
    with gate.urgent(1), gate.urgent(1), gate.urgent(1):
        assert gate.urgent_threads(4) == 1


def test_a_background_step_waits_while_urgent_work_holds_every_free_cpu() -> None:
    gate = CpuGate(lambda: 2, max_wait_s=5.0)
    inside, done = threading.Event(), threading.Event()
    got: list[tuple[int, bool]] = []

    def urgent_job() -> None:
        with gate.urgent(2):
            inside.set()
            done.wait(5)

    worker = threading.Thread(target=urgent_job)
    worker.start()
    inside.wait(5)
    waiter = threading.Thread(target=lambda: got.append((gate.background_threads(1), gate.busy)))
    waiter.start()
    time.sleep(0.2)
    assert got == [] and waiter.is_alive()  # held back while the urgent job runs
    done.set()
    waiter.join(5)
    worker.join(5)
    assert got == [(1, False)]  # and let through once it ended


def test_a_background_step_never_waits_longer_than_its_bound() -> None:
    gate = CpuGate(lambda: 1, max_wait_s=0.05)
    with gate.urgent(1):
        assert gate.busy
        assert gate.background_threads(2) == 1  # a reply must go on, on one thread


def test_urgent_work_that_leaves_cpus_free_does_not_hold_background_work() -> None:
    gate = CpuGate(lambda: 8, max_wait_s=5.0)
    with gate.urgent(2):
        started = time.monotonic()
        assert gate.background_threads(4) == 4
        assert time.monotonic() - started < 4.0  # not the bound: nothing waited


@given(st.integers(1, 16), st.lists(st.integers(1, 8), max_size=6), st.integers(1, 16))
def test_every_job_gets_at_least_one_thread_and_never_more_than_it_wants(
    free: int, urgent: list[int], wanted: int
) -> None:
    gate = CpuGate(lambda: free, max_wait_s=0.0)
    entered = [gate.urgent(threads) for threads in urgent]
    for block in entered:
        block.__enter__()
    try:
        share = gate.urgent_threads(wanted) if urgent else gate.background_threads(wanted)
        assert 1 <= share <= wanted
        assert 1 <= gate.background_threads(wanted) <= wanted
        assert gate.busy == bool(urgent)
    finally:
        for block in reversed(entered):
            block.__exit__(None, None, None)
    assert not gate.busy


def test_the_shared_gate_is_one_per_process() -> None:
    assert cpu_gate.shared() is cpu_gate.shared()


@given(st.lists(st.sampled_from(["urgent", "background"]), max_size=6), st.integers(0, 6))
def test_the_gate_is_idle_exactly_when_no_urgent_or_background_job_runs(jobs: list[str], ended: int) -> None:
    """Idle work (a prompt read ahead in idle time) waits for every job of ours, however many run and end."""
    gate = CpuGate(lambda: 2)
    assert gate.idle
    running = [gate.urgent(1) if job == "urgent" else gate.background() for job in jobs]
    for job in running:
        job.__enter__()
    for job in running[:ended]:
        job.__exit__(None, None, None)
    left = jobs[ended:]
    assert gate.idle == (not left)
    assert gate.busy == ("urgent" in left)  # a background job is not urgent: it takes no thread from one
    for job in running[ended:]:
        job.__exit__(None, None, None)
    assert gate.idle
