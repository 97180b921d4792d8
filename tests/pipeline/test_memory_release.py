"""When the pool hands freed memory back: once for a crowd of sessions ending, at once for the last one."""

from __future__ import annotations

from speech_to_speech.memory import AfterSessions


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_sessions_ending_together_release_memory_once_while_others_go_on() -> None:
    releases: list[float] = []
    clock = FakeClock()
    policy = AfterSessions(interval_s=30.0, release=lambda: releases.append(clock.now), clock=clock)
    assert [policy.session_ended(left) for left in (47, 46, 45, 44)] == [True, False, False, False]
    clock.now += 31
    assert policy.session_ended(43)
    assert releases == [100.0, 131.0]


def test_the_last_session_to_end_always_releases() -> None:
    releases: list[int] = []
    policy = AfterSessions(interval_s=30.0, release=lambda: releases.append(1), clock=FakeClock())
    assert policy.session_ended(3)
    assert policy.session_ended(0)  # nobody left to disturb: at once, interval or not
    assert policy.session_ended(0)
    assert len(releases) == 3
