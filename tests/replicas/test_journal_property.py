"""The Redis journal answers every replay exactly as the memory journal does, for any history of it."""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from speech_to_speech.realtime.connection.frames import to_frame
from speech_to_speech.realtime.sessions.journal import MemoryJournal
from speech_to_speech.realtime.sessions.store.redis_journal import RedisJournal
from speech_to_speech.testing.redis_server import RedisServer

MAX_BYTES = 400
TTL_S = 5.0
_ids = itertools.count()

# (op, amount, seconds passing before it): append a frame of ``amount`` characters; ack or replay
# after the seq ``amount`` below the last one appended.
OPS = st.lists(st.tuples(st.sampled_from(["append", "append", "ack", "after"]), st.integers(0, 150),
                         st.sampled_from([0.0, 0.5, 2.0, 6.0])), max_size=40)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _run(url: str, ops: list[tuple[str, int, float]]) -> None:
    clock = _Clock()
    redis = Redis.from_url(url)
    memory = MemoryJournal(MAX_BYTES, TTL_S, clock=clock)
    stored = RedisJournal(redis, f"prop{next(_ids)}", MAX_BYTES, TTL_S, keep_s=60, clock=clock)
    seq = 0
    try:
        for op, amount, passing in ops:
            clock.now += passing
            if op == "append":
                seq += 1
                frame = to_frame({"type": "test.event", "text": "x" * amount}, seq)
                memory.append(seq, frame)
                await stored.append(seq, frame)
            elif op == "ack":
                memory.ack(seq - amount % 5)
                await stored.ack(seq - amount % 5)
            else:
                cursor = max(0, seq - amount % 8)
                assert await stored.after(cursor) == memory.after(cursor), (op, cursor)
                assert await stored.held_bytes() == memory.held_bytes
        for cursor in range(seq + 1):
            assert await stored.after(cursor) == memory.after(cursor), cursor
    finally:
        await redis.aclose()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_the_redis_journal_replays_what_the_memory_journal_replays(shared_redis: RedisServer,
                                                                   ops: list[tuple[str, int, float]]) -> None:
    asyncio.run(_run(shared_redis.url, ops))
