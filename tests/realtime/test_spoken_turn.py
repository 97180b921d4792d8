"""A spoken turn over the wire: event order, references, transcripts, audio, formats."""

from __future__ import annotations

import base64
import re
from typing import Any

import numpy as np
import pytest
from openai import AsyncOpenAI

from speech_to_speech.protocol import Event
from speech_to_speech.testing.client_audio import decode_audio, spoken_turn
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

RATE = 24000
MS_PER_CHAR = 10.0
# Sentences, commas, a double space, a colon and a newline: the transcript must survive all of them.
REPLY = "Sure, here it is. The first part, with commas, ends here!  Then a question? Finally: one more line.\nDone."
TRANSCRIPT = "What is the capital of France?"
TONE_RMS = 0.3 / np.sqrt(2) * 32767  # the scripted TTS speaks a 0.3-level sine


def _first(events: list[Event], kind: str) -> Event:
    return next(e for e in events if e["type"] == kind)


def _index(events: list[Event], kind: str) -> int:
    return types(events).index(kind)


def _last_index(events: list[Event], kind: str) -> int:
    return len(events) - 1 - types(events)[::-1].index(kind)


def _audio_samples(events: list[Event], fmt: str = "audio/pcm") -> np.ndarray:
    chunks = [decode_audio(e["delta"], fmt) for e in events if e["type"] == "response.output_audio.delta"]
    assert chunks, "no audio deltas"
    assert all(len(c) for c in chunks), "an empty audio delta"
    return np.concatenate(chunks)


def _expected_samples(text: str, rate: int) -> tuple[int, int]:
    """Bounds on the scripted TTS audio for ``text``: MS_PER_CHAR per spoken character.

    The reply is spoken clause by clause with the whitespace between clauses
    stripped, so up to one character per clause boundary is not spoken.
    """
    per_char = MS_PER_CHAR / 1000 * rate
    chars = len(text.strip())
    clauses = len(re.findall(r"[.,!?;:\n]", text)) + 1
    return int((chars - 2 * clauses) * per_char) - clauses, int(chars * per_char) + clauses


async def _spoken_turn_events(client: RealtimeTestClient, rate: int = RATE, fmt: str = "audio/pcm") -> list[Event]:
    await client.append_audio(spoken_turn(rate), rate, fmt=fmt)
    return await client.collect_until("response.done")


async def test_spoken_turn_event_sequence(make_server: ServerFactory) -> None:
    # Transcription after the turn only: interim words stream before it ends (test_transcription.py).
    server = make_server(scripted_transcripts=[TRANSCRIPT], scripted_replies=[REPLY], interim_transcript_ms=0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        events = await _spoken_turn_events(client)

    order = [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        # As on OpenAI's server, the automatic response opens with the commit...
        "response.created",
        # ...and its output follows the turn's transcript.
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.completed",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_audio_transcript.delta",
        "response.output_audio.delta",
    ]
    positions = [_index(events, kind) for kind in order]
    assert positions == sorted(positions), types(events)
    assert _last_index(events, "response.output_audio_transcript.delta") < _index(events, "response.output_audio.done")
    closing = [
        "response.output_audio.delta",
        "response.output_audio.done",
        "response.output_audio_transcript.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.done",
    ]
    tail = [_last_index(events, kind) for kind in closing]
    assert tail == sorted(tail), types(events)
    for once in ("response.created", "response.output_audio.done", "response.output_audio_transcript.done",
                 "response.content_part.done", "response.output_item.done", "response.done"):
        assert types(events).count(once) == 1, once

    # One user item, referenced the same way by every input event.
    started = _first(events, "input_audio_buffer.speech_started")
    committed = _first(events, "input_audio_buffer.committed")
    completed = _first(events, "conversation.item.input_audio_transcription.completed")
    user_item = committed["item_id"]
    assert started["item_id"] == user_item
    assert _first(events, "input_audio_buffer.speech_stopped")["item_id"] == user_item
    assert completed["item_id"] == user_item
    assert completed["transcript"] == TRANSCRIPT
    assert completed["usage"]["type"] == "duration" and completed["usage"]["seconds"] > 0
    deltas = [e for e in events if e["type"] == "conversation.item.input_audio_transcription.delta"]
    assert all(d["item_id"] == user_item for d in deltas)
    assert "".join(d["delta"] for d in deltas) == TRANSCRIPT
    assert started["audio_start_ms"] <= _first(events, "input_audio_buffer.speech_stopped")["audio_end_ms"]

    # Every response event points at the response, its one item and content part.
    response_id = _first(events, "response.created")["response"]["id"]
    item_id = _first(events, "response.output_item.added")["item"]["id"]
    refs = [e for e in events if e["type"].startswith(("response.output_audio", "response.content_part"))]
    for event in refs:
        assert (event["response_id"], event["item_id"], event["output_index"], event["content_index"]) == (
            response_id, item_id, 0, 0), event["type"]

    # The transcript: deltas add up to the done transcript, exactly the reply.
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    done_transcript = _first(events, "response.output_audio_transcript.done")["transcript"]
    assert text == done_transcript == REPLY
    assert _first(events, "response.content_part.done")["part"]["transcript"] == REPLY

    done = events[-1]["response"]
    assert done["id"] == response_id
    assert done["status"] == "completed"
    assert done["output"][0]["id"] == item_id
    assert done["output"][0]["content"][0]["transcript"] == REPLY
    usage = done["usage"]
    assert usage["output_tokens"] > 0 and usage["input_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]

    # The assistant item follows the user item in the conversation.
    assistant_added = [e for e in events if e["type"] == "conversation.item.added" and e["item"]["id"] == item_id]
    assert [e["previous_item_id"] for e in assistant_added] == [user_item]

    # Text goes before its audio: at every audio delta, the audio so far is no more than
    # the transcript so far can account for.
    said, heard = "", 0
    for event in events:
        if event["type"] == "response.output_audio_transcript.delta":
            said += event["delta"]
        elif event["type"] == "response.output_audio.delta":
            heard += len(decode_audio(event["delta"]))
            assert heard <= _expected_samples(said, 24000)[1], (said, heard)

    samples = _audio_samples(events)
    low, high = _expected_samples(REPLY, 24000)
    assert low <= len(samples) <= high
    assert 0.8 * TONE_RMS < np.sqrt(np.mean(samples.astype(np.float64) ** 2)) < 1.2 * TONE_RMS


async def test_second_turn_gets_its_own_items(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["One.", "Two."], scripted_replies=["First.", "Second."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        first = await _spoken_turn_events(client)
        second = await _spoken_turn_events(client)
    assert _first(first, "conversation.item.input_audio_transcription.completed")["transcript"] == "One."
    assert _first(second, "conversation.item.input_audio_transcription.completed")["transcript"] == "Two."
    assert _first(second, "response.output_audio_transcript.done")["transcript"] == "Second."
    assert _first(first, "response.created")["response"]["id"] != _first(second, "response.created")["response"]["id"]
    # The second user item follows the first response's assistant item.
    assistant = _first(first, "response.output_item.added")["item"]["id"]
    assert _first(second, "input_audio_buffer.committed")["previous_item_id"] == assistant


@pytest.mark.parametrize("rate", [16000, 8000, 48000])
async def test_other_input_rates(make_server: ServerFactory, rate: int) -> None:
    def as_ga(event: dict[str, Any]) -> dict[str, Any]:
        # Input PCM at other rates is our extension; the GA schema knows only 24 kHz.
        session = event.get("session")
        if session:
            session["audio"]["input"]["format"]["rate"] = 24000
        return event

    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url, extension_view=as_ga) as client:
        await client.wait_for("session.created")
        updated = await client.update_session({"audio": {"input": {"format": {"type": "audio/pcm", "rate": rate}}}})
        assert updated["session"]["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": rate}
        events = await _spoken_turn_events(client, rate=rate)
    completed = _first(events, "conversation.item.input_audio_transcription.completed")
    # The 0.6 s tone, resampled right, is 0.6 s of speech (plus a little pad and trailing silence).
    assert 0.6 <= completed["usage"]["seconds"] <= 1.2
    assert events[-1]["response"]["status"] == "completed"


@pytest.mark.parametrize("fmt", ["audio/pcmu", "audio/pcma"])
async def test_g711_input_and_output(make_server: ServerFactory, fmt: str) -> None:
    server = make_server(scripted_replies=[REPLY])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        updated = await client.update_session({"audio": {"input": {"format": {"type": fmt}},
                                                         "output": {"format": {"type": fmt}}}})
        assert updated["session"]["audio"]["input"]["format"]["type"] == fmt
        assert updated["session"]["audio"]["output"]["format"]["type"] == fmt
        events = await _spoken_turn_events(client, rate=8000, fmt=fmt)
    completed = _first(events, "conversation.item.input_audio_transcription.completed")
    assert 0.6 <= completed["usage"]["seconds"] <= 1.2
    done = events[-1]["response"]
    assert done["status"] == "completed"
    assert done["audio"]["output"]["format"]["type"] == fmt
    # One byte per sample at 8 kHz; decoded with an independent G.711 table, it is the tone again.
    raw = b"".join(base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta")
    low, high = _expected_samples(REPLY, 8000)
    assert low - 200 <= len(raw) <= high  # the resampler may hold back a few ms
    samples = decode_audio(raw, fmt)
    assert 0.8 * TONE_RMS < np.sqrt(np.mean(samples.astype(np.float64) ** 2)) < 1.2 * TONE_RMS


async def test_openai_sdk_spoken_turn(make_server: ServerFactory) -> None:
    """The stock ``openai`` SDK client holds a spoken turn with only its URL changed."""
    server = make_server(scripted_transcripts=[TRANSCRIPT], scripted_replies=[REPLY])
    client = AsyncOpenAI(api_key="x", websocket_base_url=f"ws://127.0.0.1:{server.port}/v1")
    seen: list[str] = []
    text = ""
    audio = b""
    async with client.realtime.connect(model="speech-to-speech") as connection:
        await connection.session.update(session={"type": "realtime", "instructions": "Be brief."})
        pcm = (spoken_turn(RATE) * 32767).astype(np.int16).tobytes()
        for start in range(0, len(pcm), 4800):
            await connection.input_audio_buffer.append(audio=base64.b64encode(pcm[start : start + 4800]).decode())
        async with _deadline(10):
            async for event in connection:
                seen.append(event.type)
                if event.type == "response.output_audio_transcript.delta":
                    text += event.delta
                elif event.type == "response.output_audio.delta":
                    audio += base64.b64decode(event.delta)
                elif event.type == "conversation.item.input_audio_transcription.completed":
                    assert event.transcript == TRANSCRIPT
                elif event.type == "error":
                    raise AssertionError(event.error)
                elif event.type == "response.done":
                    assert event.response.status == "completed"
                    break
    assert seen[0] == "session.created"
    assert "session.updated" in seen
    assert text == REPLY
    assert len(audio) > 0


def _deadline(seconds: float) -> Any:
    import asyncio

    return asyncio.timeout(seconds)


@pytest.mark.parametrize("fmt", ["audio/pcmu", "audio/pcma"])
async def test_resampled_output_is_whole_and_stays_in_its_response(make_server: ServerFactory, fmt: str) -> None:
    """8 kHz output: each response carries all of its own audio and none of the previous one's."""
    replies = ["Exactly twenty chars", "Thirty six characters in one clause.", "Short one."]
    # One TTS chunk per reply (no early first chunk), so each reply's audio length is exact.
    server = make_server(scripted_replies=replies, first_chunk_words=0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"audio": {"output": {"format": {"type": fmt}}}})
        lengths = []
        for _ in replies:
            await client.send("response.create")
            events = await client.response_cycle()
            lengths.append(sum(len(base64.b64decode(e["delta"])) for e in events
                               if e["type"] == "response.output_audio.delta"))
    expected = [int(len(reply) * MS_PER_CHAR * 8) for reply in replies]  # 8 samples per ms, one byte each
    assert all(abs(got - want) <= 8 for got, want in zip(lengths, expected, strict=True)), (lengths, expected)


async def test_whole_turn_in_one_append(make_server: ServerFactory) -> None:
    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        audio = spoken_turn(RATE, speech_s=3.0, silence_s=1.0)
        await client.append_audio(audio, RATE, chunk_ms=len(audio) * 1000 // RATE + 1)
        events = await client.collect_until("response.done")
    assert len([e for e in client.sent if e["type"] == "input_audio_buffer.append"]) == 1
    assert events[-1]["response"]["status"] == "completed"
