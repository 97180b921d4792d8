"""The microphone's audio still waiting behind the wall clock: what a reply sent now must wait for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.realtime.conversation.mic_clock import MAX_BACKLOG_MS, MIN_BACKLOG_MS, MicClock

RATE = 16000
CHUNK = 320  # 20 ms


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _streamed(jitter_ms: list[int]) -> tuple[MicClock, _Clock]:
    """A microphone streaming 20 ms chunks in real time, each taken up to its ``jitter_ms`` late."""
    clock = _Clock()
    mic = MicClock(RATE, clock)
    for index, jitter in enumerate(jitter_ms):
        clock.now = (index + 1) * 0.02 + jitter / 1000
        mic.took(CHUNK)
    return mic, clock


@given(st.lists(st.integers(0, MIN_BACKLOG_MS - 20), min_size=1, max_size=300))
@settings(max_examples=100, deadline=None)
def test_a_microphone_taken_in_time_has_nothing_waiting(jitter_ms: list[int]) -> None:
    mic, _ = _streamed(jitter_ms)
    assert mic.waiting() == 0


@given(st.integers(MIN_BACKLOG_MS + 20, MAX_BACKLOG_MS - 20), st.integers(0, 10))
@settings(max_examples=50, deadline=None)
def test_a_held_event_loop_leaves_its_time_of_audio_waiting(held_ms: int, jitter_ms: int) -> None:
    mic, clock = _streamed([jitter_ms] * 100)
    clock.now += held_ms / 1000  # the loop was held: nothing taken, the time goes on
    waiting = mic.waiting()
    assert abs(waiting - (held_ms - jitter_ms) * RATE / 1000) <= CHUNK
    for _ in range(held_ms // 20 + 1):  # the chunks of that time taken at once
        mic.took(CHUNK)
    assert mic.waiting() == 0


def test_a_client_that_stopped_sending_is_not_waited_for() -> None:
    mic, clock = _streamed([0] * 100)
    clock.now += 3.0  # push to talk: nothing sent for three seconds
    assert mic.waiting() == 0
    assert MicClock(RATE, clock).waiting() == 0  # (nor one that never sent)
