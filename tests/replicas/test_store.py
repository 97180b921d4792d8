"""The Redis session store on a real redis-server: the journal mirrored behind a session, its state, its lease."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.realtime.connection.frames import to_frame
from speech_to_speech.realtime.conversation.history import ConversationState
from speech_to_speech.realtime.sessions.journal import MemoryJournal
from speech_to_speech.realtime.sessions.registry import digest
from speech_to_speech.realtime.sessions.store import MemoryStore, open_store
from speech_to_speech.realtime.sessions.store.base import Snapshot
from speech_to_speech.realtime.sessions.store.redis_store import RedisStore
from speech_to_speech.testing.redis_server import RedisServer

STORE_MODULES = ("speech_to_speech.realtime.sessions.store.redis", "speech_to_speech.realtime.sessions.store.writer",
                 "speech_to_speech.realtime.sessions.store.mirror")
CONVERSATION = ConversationState((
    {"id": "item_1", "object": "realtime.item", "type": "message", "role": "user", "status": "completed",
     "content": [{"type": "input_text", "text": "hello"}]},
    {"id": "item_2", "object": "realtime.item", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_audio", "transcript": "hi there"}]}), said={"item_2": "hi"})


class Counts:
    def __init__(self) -> None:
        self.by_outcome: dict[str, int] = {}

    def __call__(self, outcome: str, count: int) -> None:
        self.by_outcome[outcome] = self.by_outcome.get(outcome, 0) + count


@pytest.fixture
async def store(redis_server: RedisServer) -> AsyncIterator[RedisStore]:
    store = RedisStore(redis_server.url, lease_s=1.0, keep_s=30.0, on_write=Counts())
    await store.start(_ignore)
    yield store
    await store.close()


async def _ignore(session_id: str) -> None:
    pass


def _snapshot() -> Snapshot:
    return Snapshot({"id": "sess_1", "instructions": "be brief"}, CONVERSATION, "evt_client_7")


def _frame(seq: int, kind: str = "response.output_audio.delta", **fields: Any) -> Any:
    return to_frame({"type": kind, **fields}, seq)


async def test_the_memory_store_is_this_process_only() -> None:
    store = open_store(ServerSettings())
    assert isinstance(store, MemoryStore) and not store.shared
    assert await store.reachable() and await store.load("sess_1") is None


async def test_a_session_s_journal_token_and_state_reach_redis_behind_it(store: RedisStore) -> None:
    link = store.link("sess_1", MemoryJournal(), _snapshot)
    link.token("rt_first")
    for seq in range(1, 6):
        link.journal.append(seq, _frame(seq, delta="x" * seq))
    link.journal.append(6, _frame(6, "response.created", response={"id": "resp_1", "status": "in_progress"}))
    link.journal.ack(2)
    assert await store.writer.flush(2.0)
    stored = await store.load("sess_1")
    assert stored is not None
    assert [f.seq for f in stored.frames] == [3, 4, 5, 6] and stored.last_seq == 6 and stored.floor == 2
    assert stored.frames == link.journal.after(2).frames
    assert stored.session == {"id": "sess_1", "instructions": "be brief"} and stored.conversation == CONVERSATION
    assert stored.last_client_event_id == "evt_client_7"
    assert stored.response == {"id": "resp_1", "status": "in_progress"}
    assert await store.token_digest("sess_1") == digest("rt_first")
    assert await store.rotate("sess_1", digest("rt_first"), digest("rt_second"))
    assert not await store.rotate("sess_1", digest("rt_first"), digest("rt_third"))  # used already
    await link.finish(keep=False)
    assert await store.load("sess_1") is None


async def test_the_lease_of_a_replica_that_is_gone_is_taken_at_once(redis_server: RedisServer) -> None:
    owner = RedisStore(redis_server.url, lease_s=5.0)
    other = RedisStore(redis_server.url, lease_s=5.0)
    try:
        await owner.start(_ignore)
        owner.link("sess_1", MemoryJournal(), _snapshot)
        await asyncio.sleep(0.3)
        assert (await owner.redis.get("s2s:{sess_1}:owner")).decode() == owner.replica_id
        await owner.close()  # its takeover channel goes with it: nobody hears the request
        started = asyncio.get_running_loop().time()
        assert await other.claim("sess_1")
        assert asyncio.get_running_loop().time() - started < 1.0  # not the 5 s of the lease
        assert (await other.redis.get("s2s:{sess_1}:owner")).decode() == other.replica_id
    finally:
        await other.close()


async def test_an_owner_that_heard_the_request_and_died_before_answering_loses_the_session_as_it_dies(
        redis_server: RedisServer) -> None:
    """A killed process takes a while to die (a server holding GBs of weights, tens of ms or more): a request
    it heard meanwhile is never answered. Its lease (a minute here) is not waited for: once Redis saw its
    connections close, the session is taken."""
    owner = RedisStore(redis_server.url, lease_s=60.0)
    other = RedisStore(redis_server.url, lease_s=3.0)  # it gives up after its own lease (and a second)
    heard = asyncio.Event()

    async def dying(session_id: str) -> None:
        heard.set()  # and never lets go

    try:
        await owner.start(dying)
        owner.link("sess_1", MemoryJournal(), _snapshot)
        await asyncio.sleep(0.3)
        assert (await owner.redis.get("s2s:{sess_1}:owner")).decode() == owner.replica_id
        claim = asyncio.create_task(other.claim("sess_1"))
        await asyncio.wait_for(heard.wait(), 10.0)
        await owner.close()  # the process is gone: its connections close, its lease stays behind
        assert await claim
        assert (await other.redis.get("s2s:{sess_1}:owner")).decode() == other.replica_id
    finally:
        await other.close()


async def test_a_live_owner_is_asked_and_lets_go(redis_server: RedisServer) -> None:
    owner = RedisStore(redis_server.url, lease_s=5.0)
    other = RedisStore(redis_server.url, lease_s=5.0)
    asked: list[str] = []
    links = {}

    async def hand_over(session_id: str) -> None:
        asked.append(session_id)
        await links[session_id].finish(keep=True)

    try:
        await owner.start(hand_over)
        links["sess_1"] = owner.link("sess_1", MemoryJournal(), _snapshot)
        await asyncio.sleep(0.3)
        assert await asyncio.wait_for(other.claim("sess_1"), 5.0)
        assert asked == ["sess_1"]
        assert await other.load("sess_1") is not None  # kept for the new owner
    finally:
        await owner.close()
        await other.close()


async def test_with_redis_down_writes_are_dropped_counted_and_leave_a_gap(redis_server: RedisServer) -> None:
    counts = Counts()
    store = RedisStore(redis_server.url, lease_s=1.0, on_write=counts)
    store.writer.max_ops = 8
    try:
        link = store.link("sess_1", MemoryJournal(), _snapshot)
        link.journal.append(1, _frame(1))
        assert await store.writer.flush(2.0)
        redis_server.stop()
        for seq in range(2, 40):  # never waits: the session goes on from memory
            link.journal.append(seq, _frame(seq))
        assert len(link.journal.after(0).frames) == 39
        await store.writer.flush(3.0)
        assert counts.by_outcome.get("dropped", 0) > 0 and counts.by_outcome.get("failed", 0) > 0
        redis_server.start()
        link.journal.append(40, _frame(40))
        for _ in range(50):
            if await store.writer.flush(2.0) and (await store.load("sess_1")) is not None:
                break
        stored = await store.load("sess_1")
        assert stored is not None
        assert [f.seq for f in stored.frames] == [40] and stored.floor == 39  # the gap is said, not skipped
    finally:
        await store.close()


def test_without_the_redis_package_the_redis_store_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "redis" or n.startswith(("redis.", *STORE_MODULES))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "redis", None)  # as if not installed
    with pytest.raises(RuntimeError, match=r"speech-to-speech\[redis\]"):
        open_store(ServerSettings(session_store="redis://127.0.0.1:1/0"))


async def test_a_store_that_lost_a_session_gets_its_token_and_state_again_and_says_the_gap(
        redis_server: RedisServer) -> None:
    store = RedisStore(redis_server.url, lease_s=0.6)
    try:
        await store.start(_ignore)
        link = store.link("sess_1", MemoryJournal(), _snapshot)
        link.token("rt_first")
        for seq in range(1, 4):
            link.journal.append(seq, _frame(seq))
        assert await store.writer.flush(2.0) and await store.token_digest("sess_1") == digest("rt_first")
        await store.redis.flushall()  # Redis restarted without persistence: every key gone
        link.journal.append(4, _frame(4))
        for _ in range(50):  # the heartbeat finds the lease gone and has the rest written again
            await asyncio.sleep(0.1)
            if await store.token_digest("sess_1") is not None:
                break
        assert await store.writer.flush(2.0)
        stored = await store.load("sess_1")
        assert await store.token_digest("sess_1") == digest("rt_first")
        assert stored is not None and stored.conversation == CONVERSATION
        assert stored.last_client_event_id == "evt_client_7"
        assert [f.seq for f in stored.frames] == [4] and stored.floor == 3  # 1-3 are gone, and it says so
    finally:
        await store.close()
