"""The visemes extension over WebSocket: opt-in twice over, ahead of its audio, as long as it, cancelled with it."""

from __future__ import annotations

from typing import Any

from speech_to_speech.protocol import VISEMES_EXTENSION, Event
from speech_to_speech.testing.client_audio import decode_audio
from speech_to_speech.testing.event_matchers import of_response, types
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.visemes.catalog import VISEMES

from .conftest import ServerFactory

RATE = 24000
FRAME_MS = 20  # the acoustic route's frame: the "one frame" a chunk's visemes may be off by
REPLY = "Paris is the capital of France. It is on the Seine."
LONG_REPLY = " ".join(f"Clause number {n} goes on, and on." for n in range(1, 11))
SLOW: dict[str, Any] = {"scripted_token_delay_ms": 15.0, "scripted_tts_ms_per_char": 20.0}


async def _session(client: RealtimeTestClient, extensions: list[str]) -> None:
    await client.wait_for("session.created")
    await client.update_session({"extensions": extensions})


async def _answer(client: RealtimeTestClient) -> list[Event]:
    await client.send("response.create")
    return await client.collect_until("response.done")


async def test_visemes_come_before_each_audio_chunk_and_last_as_long(make_server: ServerFactory) -> None:
    server = make_server(enable_visemes=True, scripted_replies=[REPLY])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await _session(client, [VISEMES_EXTENSION])
        events = await _answer(client)

    assert events[-1]["response"]["status"] == "completed"
    deltas = [i for i, e in enumerate(events) if e["type"] == "response.output_audio.delta"]
    assert len(deltas) > 3
    expected_start = 0
    for index in deltas:
        delta, visemes = events[index], events[index - 1]
        assert visemes["type"] == VISEMES_EXTENSION  # right before its audio, every time
        assert set(visemes) == {"type", "event_id", "response_id", "item_id", "output_index", "content_index",
                                "audio_start_ms", "source", "visemes",  # the schema of docs/visemes.md
                                "server_event_seq"}  # as on every event of a session (docs/sessions.md)
        for key in ("response_id", "item_id", "output_index", "content_index"):
            assert visemes[key] == delta[key]
        chunk_ms = len(decode_audio(delta["delta"])) * 1000 / RATE
        cues = visemes["visemes"]
        assert abs(sum(c["duration_ms"] for c in cues) - chunk_ms) < FRAME_MS
        assert [c["start_ms"] for c in cues] == [sum(c["duration_ms"] for c in cues[:n]) for n in range(len(cues))]
        assert all(c["viseme"] in VISEMES and c["duration_ms"] > 0 for c in cues)
        assert visemes["source"] == "audio"  # the scripted TTS says nothing of phonemes
        assert abs(visemes["audio_start_ms"] - expected_start) <= 1  # where the chunk sits in the item's audio
        expected_start += round(chunk_ms)
    # The scripted tone is heard as sound: not every chunk is silence.
    assert any(c["viseme"] != "sil" for i in deltas for c in events[i - 1]["visemes"])


async def test_off_unless_the_server_and_the_session_both_ask(make_server: ServerFactory) -> None:
    on = make_server(enable_visemes=True, scripted_replies=[REPLY])
    off = make_server(scripted_replies=[REPLY])
    seen: list[list[str]] = []
    for server, extensions in ((on, []), (off, [VISEMES_EXTENSION]), (off, [])):
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await _session(client, extensions)
            events = await _answer(client)
        assert "response.output_audio.delta" in types(events)
        seen.append([t for t in types(events) if t == VISEMES_EXTENSION])
    assert seen == [[], [], []]


async def test_a_cancelled_response_stops_its_visemes_with_its_audio(make_server: ServerFactory) -> None:
    server = make_server(enable_visemes=True, scripted_replies=[LONG_REPLY, "After the cancel."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await _session(client, [VISEMES_EXTENSION])
        await client.send("response.create")
        before = await client.collect_until("response.output_audio.delta")
        old = next(e for e in before if e["type"] == "response.created")["response"]["id"]
        assert VISEMES_EXTENSION in types(before)
        await client.send("response.cancel")
        events = await client.collect_until("response.done")
        assert events[-1]["response"]["status"] == "cancelled"
        stale = [e["type"] for e in await client.barrier() if of_response(old)(e)]
        assert stale == []  # neither visemes nor audio of the cancelled response after its terminal
        after = await _answer(client)

    assert after[-1]["response"]["status"] == "completed"
    kinds = types(after)
    assert kinds.count(VISEMES_EXTENSION) == kinds.count("response.output_audio.delta") > 0
    assert not [e for e in after if of_response(old)(e)]
