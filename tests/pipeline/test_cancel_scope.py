"""CancelScope: a generation counter; stale output is whatever carries an older generation."""

from __future__ import annotations

import queue
import threading

from speech_to_speech.pipeline.cancel_scope import CancelScope


def test_starts_at_generation_zero() -> None:
    scope = CancelScope()
    assert scope.generation == 0
    assert not scope.is_stale(0)


def test_cancel_moves_the_generation_on_and_makes_every_earlier_one_stale() -> None:
    scope = CancelScope()
    assert scope.cancel() == 1
    assert scope.generation == 1
    assert scope.is_stale(0)
    assert not scope.is_stale(1)
    scope.cancel()
    assert scope.is_stale(0) and scope.is_stale(1)
    assert not scope.is_stale(2)


def test_a_generation_never_becomes_current_again() -> None:
    scope = CancelScope()
    seen = [scope.generation]
    for _ in range(5):
        seen.append(scope.cancel())
    assert all(scope.is_stale(generation) for generation in seen[:-1])
    assert len(set(seen)) == len(seen)


def test_put_if_current_refuses_stale_items() -> None:
    scope = CancelScope()
    out: queue.Queue[str] = queue.Queue()
    assert scope.put_if_current(out, "fresh", 0)
    scope.cancel()
    assert not scope.put_if_current(out, "stale", 0)
    assert scope.put_if_current(out, "new", 1)
    assert [out.get_nowait(), out.get_nowait()] == ["fresh", "new"]
    assert out.empty()


def test_nothing_stale_is_queued_once_cancel_returned() -> None:
    """A producer racing cancel() never lands an old-generation item after it."""
    scope = CancelScope()
    out: queue.Queue[int] = queue.Queue()
    stop = threading.Event()

    def produce() -> None:
        while not stop.is_set():
            scope.put_if_current(out, 0, 0)

    producer = threading.Thread(target=produce)
    producer.start()
    try:
        while out.qsize() < 100:
            pass
        scope.cancel()
        queued_before = out.qsize()
    finally:
        stop.set()
        producer.join()
    assert out.qsize() == queued_before


def test_generations_are_unique_under_concurrent_cancels() -> None:
    scope = CancelScope()
    seen: list[int] = []
    lock = threading.Lock()

    def cancel_many() -> None:
        for _ in range(500):
            generation = scope.cancel()
            with lock:
                seen.append(generation)

    threads = [threading.Thread(target=cancel_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen) == list(range(1, 2001))
    assert scope.generation == 2000
