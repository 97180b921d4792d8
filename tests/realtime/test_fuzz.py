"""Fuzzing the wire (hypothesis): malformed and odd-but-valid client events across concurrent sessions.

Every example opens four sessions on a four-unit server and sends each a
drawn mix of events, interleaved. Then each session answers a sentinel
event, so every answer to what came before is in. The server must not
crash or drop a session; every malformed event is answered with an
``error`` naming its ``event_id`` (when it had one to name); no error is an
internal ``server_error``; and the server events pass the strict schema
check of the test client. After all examples every unit is idle, healthy,
and was never rebuilt. ``S2S_FUZZ_EXAMPLES`` sets the number of examples
(CI keeps it small; each example sends up to 60 events).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as count_frames
from hypothesis import strategies as st

from speech_to_speech.config import ServerSettings
from speech_to_speech.testing.event_matchers import is_error_for
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import FAST_SCRIPTED
from speech_to_speech.testing.server import RunningServer, running_server

EXAMPLES = int(os.environ.get("S2S_FUZZ_EXAMPLES", "40"))
SESSIONS = 4
MAX_EVENT_BYTES = 256 * 1024
KNOWN = ("session.update", "input_audio_buffer.append", "input_audio_buffer.commit", "input_audio_buffer.clear",
         "conversation.item.create", "conversation.item.retrieve", "conversation.item.truncate",
         "conversation.item.delete", "response.create", "response.cancel")
_ids = itertools.count()


@dataclass(frozen=True)
class Frame:
    """One frame to send: its payload, the event_id it carries (if any), and whether it must be refused."""

    payload: str | bytes
    event_id: str | None
    malformed: bool


def _eid() -> str:
    return f"fz_{next(_ids)}"


def _event(event: dict[str, Any], *, malformed: bool, with_id: bool = True) -> Frame:
    event_id = _eid() if with_id else None
    body = {**event, "event_id": event_id} if with_id else event
    return Frame(json.dumps(body), event_id, malformed)


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                  max_size=3), max_leaves=8)
PCM = st.binary(min_size=0, max_size=2048).map(lambda b: b[: len(b) // 2 * 2])
SESSION_BAD = st.sampled_from([
    {"audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": 1.5}}}},
    {"audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": -0.2}}}},
    {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 4000}}}},
    {"audio": {"output": {"format": {"type": "audio/flac"}}}},
    {"audio": {"output": {"voice": "no such voice!"}}},
    {"audio": {"output": {"voice": "no-such-voice-abc"}}},
    {"voice": "no-such-voice-abc"},
    {"instructions": "x" * 100_001},
    {"tools": [{"type": "function", "name": f"t{i}"} for i in range(129)]},
    {"tools": [{"type": "function", "name": "t", "parameters": {"type": "nonsense"}}]},
    {"tools": "all of them"},
    {"tool_choice": "sometimes"},
    {"output_modalities": ["smell"]},
    {"max_output_tokens": 0},
    {"type": "transcription"},
])
SESSION_OK = st.fixed_dictionaries({}, optional={
    "instructions": st.text(max_size=40),
    "audio": st.fixed_dictionaries({}, optional={
        "input": st.fixed_dictionaries({}, optional={"turn_detection": st.none() | st.fixed_dictionaries(
            {"type": st.just("server_vad")}, optional={"threshold": st.floats(0, 1),
                                                        "silence_duration_ms": st.integers(0, 2000)})}),
        "output": st.fixed_dictionaries({}, optional={"voice": st.sampled_from(["alloy", "marin", "low_tone"])}),
    }),
    "tools": st.lists(st.builds(lambda n: {"type": "function", "name": n, "parameters": {"type": "object"}},
                                st.from_regex(r"[a-z]{1,8}", fullmatch=True)),
                      max_size=3, unique_by=lambda t: t["name"]),
    "unknown_field": JSONISH,
})


def _deep(depth: int) -> str:
    return f'{{"event_id": "{_eid()}", "type": "session.update", "session": ' + "[" * depth + "]" * depth + "}"


@st.composite
def malformed(draw: st.DrawFn) -> Frame:
    kind = draw(st.sampled_from(["not json", "broken json with id", "binary", "not an object", "no type",
                                 "type not a string", "unknown type", "wrong field", "bad base64", "odd pcm",
                                 "too deep", "past the parser", "too large", "bad session", "bad response"]))
    if kind == "not json":
        text = draw(st.text(min_size=1, max_size=30).filter(lambda t: not _is_json(t)))
        return Frame(text, None, True)
    if kind == "broken json with id":
        event_id = _eid()
        return Frame(f'{{"event_id": "{event_id}", "type": "response.create", ' + draw(st.text(max_size=10)),
                     event_id, True)
    if kind == "binary":
        return Frame(draw(st.binary(min_size=1, max_size=64)) + b"\xff", None, True)
    if kind == "not an object":
        return Frame(json.dumps(draw(st.lists(JSONISH, max_size=3) | st.integers() | st.text(max_size=5))), None,
                     True)
    if kind == "no type":
        return _event({"session": {}}, malformed=True)
    if kind == "type not a string":
        return _event({"type": draw(st.integers() | st.lists(st.integers(), max_size=2) | st.none())},
                      malformed=True)
    if kind == "unknown type":
        return _event({"type": draw(st.text(max_size=20).filter(lambda t: t not in KNOWN))}, malformed=True)
    if kind == "wrong field":
        event = draw(st.sampled_from([
            {"type": "input_audio_buffer.append", "audio": draw(st.integers() | st.none() | st.lists(st.integers()))},
            {"type": "session.update", "session": draw(st.integers() | st.text(max_size=5) | st.none())},
            {"type": "conversation.item.create", "item": draw(st.integers() | st.text(max_size=5))},
            {"type": "conversation.item.retrieve", "item_id": draw(st.integers() | st.none())},
            {"type": "conversation.item.delete", "item_id": draw(st.text(max_size=8).map(lambda t: "nope_" + t))},
            {"type": "response.create", "response": draw(st.integers() | st.text(max_size=5))},
        ]))
        return _event(event, malformed=True)
    if kind == "bad base64":
        return _event({"type": "input_audio_buffer.append", "audio": "***" + draw(st.text(max_size=8))},
                      malformed=True)
    if kind == "odd pcm":
        odd = draw(st.binary(min_size=1, max_size=99).filter(lambda b: len(b) % 2 == 1))
        return _event({"type": "input_audio_buffer.append", "audio": base64.b64encode(odd).decode()},
                      malformed=True)
    if kind == "too deep":
        nested: Any = 1
        for _ in range(draw(st.integers(33, 200))):
            nested = [nested]
        return _event({"type": "session.update", "session": {"metadata": nested}}, malformed=True)
    if kind == "past the parser":
        return _sniffed(_deep(draw(st.integers(50_000, 120_000))))
    if kind == "too large":
        return _event({"type": "input_audio_buffer.append", "audio": "A" * (MAX_EVENT_BYTES + 16)}, malformed=True)
    if kind == "bad session":
        return _event({"type": "session.update", "session": {"type": "realtime", **draw(SESSION_BAD)}},
                      malformed=True)
    return _event({"type": "response.create", "response": draw(st.sampled_from([
        {"output_modalities": ["audio", "text"]}, {"tool_choice": {"type": "function"}},
        {"metadata": {"n": 1}}, {"conversation": "elsewhere"}, {"instructions": "x" * 100_001},
        {"audio": {"output": {"voice": ["alloy"]}}}]))}, malformed=True)


def _sniffed(payload: str) -> Frame:
    return Frame(payload, payload.split('"')[3], True)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@st.composite
def odd_but_valid(draw: st.DrawFn) -> Frame:
    kind = draw(st.sampled_from(["update", "append", "commit", "clear", "item", "retrieve", "create", "cancel"]))
    event: dict[str, Any] = {
        "update": lambda: {"type": "session.update", "session": {"type": "realtime", **draw(SESSION_OK)}},
        "append": lambda: {"type": "input_audio_buffer.append", "audio": base64.b64encode(draw(PCM)).decode()},
        "commit": lambda: {"type": "input_audio_buffer.commit"},
        "clear": lambda: {"type": "input_audio_buffer.clear"},
        "item": lambda: {"type": "conversation.item.create", "item": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": draw(st.text(max_size=20))}]}},
        "retrieve": lambda: {"type": "conversation.item.retrieve", "item_id": "item_" + draw(st.text(max_size=6))},
        "create": lambda: {"type": "response.create", "response": {"output_modalities": ["text"],
                                                                      "metadata": {"fuzz": "yes"}}},
        "cancel": lambda: {"type": "response.cancel"},
    }[kind]()
    return _event({**event, "x_extra": draw(JSONISH)} if draw(st.booleans()) else event, malformed=False)


FRAMES = st.lists(st.tuples(st.integers(0, SESSIONS - 1), st.one_of(malformed(), odd_but_valid())),
                  min_size=10, max_size=60)
SENT = {"examples": 0, "frames": 0, "malformed": 0}  # totals, printed at the end (pytest -s)


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[RunningServer]:
    settings_ = ServerSettings(**{**FAST_SCRIPTED, "num_pipelines": SESSIONS, "max_event_bytes": MAX_EVENT_BYTES,
                                  "max_sessions_per_minute": 0, "scripted_tts_ms_per_char": 1.0})
    with running_server(settings_) as server:
        yield server
        deadline = time.monotonic() + 15
        while not all(s.state == "idle" and s.healthy for s in server.pool.status()):
            assert time.monotonic() < deadline, f"pool not free after fuzzing: {server.pool.status()}"
            time.sleep(0.02)
        assert [s.rebuilds for s in server.pool.status()] == [0] * SESSIONS
        print(f"\nfuzzed: {SENT['examples']} examples, {SENT['frames']} frames ({SENT['malformed']} malformed)"
              f" over {SESSIONS} concurrent sessions each")


async def _example(server: RunningServer, frames: list[tuple[int, Frame]]) -> None:
    async with _sessions(server) as clients:
        for index, frame in frames:
            await clients[index].send_raw(frame.payload)
        for index, client in enumerate(clients):
            sentinel = await client.send("conversation.item.retrieve", item_id="item_sentinel")
            await client.collect_until(is_error_for(sentinel), timeout=30)
            assert client.close_code is None, f"session {index} was closed: {client.close_code}"
        for index, client in enumerate(clients):
            errors = [r.event["error"] for r in client.received if r.event.get("type") == "error"]
            answered = {e["event_id"] for e in errors}
            sent = [f for i, f in frames if i == index]
            missing = [f for f in sent if f.malformed and f.event_id and f.event_id not in answered]
            assert not missing, f"no error for {[str(f.payload)[:80] for f in missing]}"
            anonymous = sum(1 for f in sent if f.malformed and f.event_id is None)
            assert sum(1 for e in errors if e["event_id"] is None) >= anonymous
            assert not [e for e in errors if e["code"] == "server_error"], errors


@contextlib.asynccontextmanager
async def _sessions(server: RunningServer) -> AsyncIterator[list[RealtimeTestClient]]:
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(RealtimeTestClient.connect(server.ws_url, timeout=30))
                   for _ in range(SESSIONS)]
        for client in clients:
            await client.wait_for("session.created")
        yield clients


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.data_too_large,
                                                                        HealthCheck.function_scoped_fixture])
@given(frames=FRAMES)
def test_no_malformed_event_goes_unanswered_and_no_session_is_lost(fuzz_server: RunningServer,
                                                                   frames: list[tuple[int, Frame]]) -> None:
    count_frames("malformed frames", sum(frame.malformed for _, frame in frames))
    SENT["examples"] += 1
    SENT["frames"] += len(frames)
    SENT["malformed"] += sum(frame.malformed for _, frame in frames)
    asyncio.run(_example(fuzz_server, frames))
