"""CancelScope, as the spec's Interruption Handling section defines it."""

from __future__ import annotations

import queue
import threading

from speech_to_speech.pipeline.cancel_scope import CancelScope


def test_starts_at_generation_zero_and_not_discarding() -> None:
    scope = CancelScope()
    assert scope.generation == 0
    assert not scope.discarding
    assert not scope.is_stale(0)
    assert not scope.is_discardable(0)


def test_cancel_moves_the_generation_on_and_makes_every_earlier_one_stale() -> None:
    scope = CancelScope()
    assert scope.cancel() == 1
    assert scope.generation == 1
    assert scope.discarding
    assert scope.is_stale(0)
    assert not scope.is_stale(1)
    scope.cancel()
    assert scope.is_stale(0) and scope.is_stale(1)
    assert not scope.is_stale(2)


def test_discardable_is_stale_output_while_current_output_passes() -> None:
    scope = CancelScope()
    scope.cancel()
    assert scope.is_discardable(0)
    assert not scope.is_discardable(1)  # the new response's output goes through while discarding
    scope.response_done(0)
    assert scope.is_discardable(0)  # stale output stays discardable after the guard clears


def test_response_done_of_the_cancelled_generation_clears_the_discard_flag() -> None:
    scope = CancelScope()
    scope.cancel()
    scope.response_done(0)
    assert not scope.discarding
    assert scope.generation == 1


def test_response_done_of_the_current_generation_clears_the_discard_flag() -> None:
    scope = CancelScope()
    scope.cancel()
    scope.response_done(1)
    assert not scope.discarding


def test_response_done_of_an_unrelated_older_generation_is_ignored() -> None:
    scope = CancelScope()
    scope.cancel()  # 0 -> 1
    scope.cancel()  # 1 -> 2, discarding 1
    scope.response_done(0)  # a late sentinel of a response cancelled long ago
    assert scope.discarding
    scope.response_done(1)
    assert not scope.discarding


def test_response_done_without_a_cancel_changes_nothing() -> None:
    scope = CancelScope()
    scope.response_done(0)
    assert scope.generation == 0
    assert not scope.discarding


def test_new_response_clears_discarding_and_keeps_the_generation() -> None:
    scope = CancelScope()
    scope.cancel()
    assert scope.new_response() == 1
    assert not scope.discarding
    assert scope.generation == 1
    # The cancelled generation's sentinel arriving later must not disturb anything.
    scope.response_done(0)
    assert not scope.discarding and scope.generation == 1


def test_reset_makes_everything_in_flight_stale_without_discarding() -> None:
    scope = CancelScope()
    scope.cancel()
    assert scope.reset() == 2
    assert not scope.discarding
    assert scope.is_stale(1)
    assert scope.is_discardable(1)
    assert not scope.is_discardable(2)


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
