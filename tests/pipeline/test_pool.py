"""PipelinePool: claim, release with drain, quarantine and rebuild of units."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TTSInput
from speech_to_speech.testing.engine import (
    next_of,
    request,
    respond,
    scripted_builders,
    scripted_settings,
    stage,
    wait_until,
)
from speech_to_speech.tts.base import SpeechPart, TTSHandler
from speech_to_speech.units.pool import PipelinePool
from speech_to_speech.units.unit import PipelineUnit

SETTINGS = scripted_settings()
RELEASE = threading.Event()  # frees blocked handler threads at teardown
STUCK = threading.Event()  # set once a StuckTTS hangs


class StuckTTS(TTSHandler):
    """A TTS that hangs on its first clause, like a model that never returns."""

    def process(self, item: TTSInput) -> Iterator[SpeechPart]:
        STUCK.set()
        RELEASE.wait()
        yield from ()


@pytest.fixture(autouse=True)
def release_stuck_threads() -> Iterator[None]:
    RELEASE.clear()
    STUCK.clear()
    yield
    RELEASE.set()


def scripted_unit(index: int) -> PipelineUnit:
    return PipelineUnit(index, scripted_builders(SETTINGS))


@pytest.fixture
def make_pool() -> Iterator[Any]:
    pools: list[PipelinePool] = []

    def make(size: int, build: Any = scripted_unit, release_timeout_s: float = 5.0) -> PipelinePool:
        pool = PipelinePool(size, build, release_timeout_s=release_timeout_s)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.close()


def states(pool: PipelinePool) -> list[str]:
    return [slot.state for slot in pool.status()]


def test_claims_up_to_the_pool_size(make_pool: Any) -> None:
    pool = make_pool(3)
    units = [pool.claim() for _ in range(3)]
    assert all(u is not None for u in units)
    assert len({id(u) for u in units}) == 3
    assert pool.claim() is None
    assert states(pool) == ["busy", "busy", "busy"]


def test_a_released_unit_drains_and_can_be_claimed_again(make_pool: Any) -> None:
    pool = make_pool(1)
    unit = pool.claim()
    assert unit is not None
    unit.config.update(instructions="session one")
    respond(unit, "resp_1")
    pool.release(unit, wait=True)
    assert states(pool) == ["idle"]
    again = pool.claim()
    assert again is unit
    assert again.config.current.instructions is None  # per-session config does not leak
    assert respond(again, "resp_2").done.status == "completed"


def test_release_while_a_response_streams_stops_it(make_pool: Any) -> None:
    reply = " ".join(f"Clause {n} goes on." for n in range(100))
    settings = scripted_settings(scripted_replies=[reply], scripted_token_delay_ms=10)
    pool = make_pool(1, lambda i: PipelineUnit(i, scripted_builders(settings)))
    unit = pool.claim()
    unit.submit(request(unit, "resp_long"))
    next_of(unit.queues.response_output, AudioOutput)
    pool.release(unit, wait=True)
    assert states(pool) == ["idle"]
    assert pool.status()[0].rebuilds == 0


def test_releasing_twice_or_a_stranger_changes_nothing(make_pool: Any) -> None:
    pool = make_pool(1)
    unit = pool.claim()
    pool.release(unit, wait=True)
    pool.release(unit, wait=True)
    pool.release(scripted_unit(0), wait=True)
    assert states(pool) == ["idle"]
    assert pool.claim() is unit


def test_a_unit_that_does_not_drain_is_quarantined_and_rebuilt(make_pool: Any) -> None:
    built: list[PipelineUnit] = []

    def build(index: int) -> PipelineUnit:
        # The first unit hangs in its TTS; rebuilt ones are healthy.
        tts = stage(StuckTTS, SETTINGS) if not built else None
        unit = PipelineUnit(index, scripted_builders(SETTINGS, **({"tts": tts} if tts else {})))
        built.append(unit)
        return unit

    pool = make_pool(1, build, release_timeout_s=0.3)
    stuck = pool.claim()
    assert stuck is built[0]
    stuck.submit(request(stuck, "resp_stuck"))
    assert STUCK.wait(10)
    pool.release(stuck, wait=True)
    assert pool.claim() is None  # quarantined (or already rebuilding): never handed out
    wait_until(lambda: states(pool) == ["idle"], what="rebuilt unit idle")
    assert pool.status()[0].rebuilds == 1
    fresh = pool.claim()
    assert fresh is not None and fresh is not stuck
    assert respond(fresh, "resp_fresh").done.status == "completed"


def test_a_unit_with_a_dead_thread_is_not_handed_out(make_pool: Any) -> None:
    pool = make_pool(2)
    dead = pool.units()[0]
    dead.stop()  # every handler thread of unit 0 ends
    wait_until(lambda: not dead.healthy(), what="unit 0 dead")
    claimed = pool.claim()
    assert claimed is not None and claimed is not dead
    wait_until(lambda: pool.status()[0].rebuilds == 1 and states(pool)[0] == "idle", what="unit 0 rebuilt")
    replacement = pool.claim()
    assert replacement is not None and replacement is not dead and replacement.healthy()
    assert respond(replacement, "resp_r").done.status == "completed"


def test_a_unit_that_dies_while_claimed_is_quarantined_on_release(make_pool: Any) -> None:
    # A long drain timeout: a dead unit must be quarantined without waiting for it.
    pool = make_pool(1, release_timeout_s=60)
    unit = pool.claim()
    unit.stop()
    wait_until(lambda: not unit.healthy(), what="unit dead")
    pool.release(unit)
    wait_until(lambda: pool.status()[0].rebuilds == 1, timeout=5, what="rebuild")
    replacement = pool.claim()
    assert replacement is not None and replacement is not unit


def test_a_rebuild_that_fails_is_retried_until_it_succeeds(make_pool: Any) -> None:
    attempts: list[int] = []

    def build(index: int) -> PipelineUnit:
        attempts.append(index)
        if 2 <= len(attempts) <= 4:  # the first build (at startup) works; the next three fail
            raise RuntimeError("the model server is down")
        return PipelineUnit(index, scripted_builders(SETTINGS))

    pool = PipelinePool(1, build, release_timeout_s=1.0, rebuild_backoff_s=0.01)
    try:
        dead = pool.claim()
        assert dead is not None
        dead.stop()
        wait_until(lambda: not dead.healthy(), what="unit dead")
        pool.release(dead)
        wait_until(lambda: states(pool) == ["idle"], what="rebuilt after three failed builds")
        assert len(attempts) == 5
        assert pool.status()[0].rebuilds == 1
        fresh = pool.claim()
        assert fresh is not None and fresh is not dead
        assert respond(fresh, "resp_after_retries").done.status == "completed"
    finally:
        pool.close()


def test_closing_the_pool_stops_rebuild_retries(make_pool: Any) -> None:
    attempts: list[int] = []

    def build(index: int) -> PipelineUnit:
        attempts.append(index)
        if len(attempts) > 1:
            raise RuntimeError("never again")
        return PipelineUnit(index, scripted_builders(SETTINGS))

    pool = PipelinePool(1, build, rebuild_backoff_s=0.01)
    dead = pool.claim()
    assert dead is not None
    dead.stop()
    wait_until(lambda: not dead.healthy(), what="unit dead")
    pool.release(dead)
    wait_until(lambda: len(attempts) >= 3, what="retries")
    pool.close()
    settled = len(attempts)
    wait_until(lambda: not [t for t in threading.enumerate() if t.name == "rebuild-unit0"], what="retrier gone")
    assert len(attempts) <= settled + 1
    assert states(pool) == ["quarantined"]
