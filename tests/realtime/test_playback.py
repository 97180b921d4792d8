"""Playback truth: cutting an assistant item at what was heard, and a media track's play-out events.

The ledger is driven here with a fake track (what a WebRTC track reports as it
plays); ``conversation.item.truncate`` is driven over a WebSocket against the
real server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.playback import Playback, heard_text
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.testing.client_audio import decode_audio
from speech_to_speech.testing.event_matchers import is_error_for, types
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

SECOND = 24000


def test_a_transcript_is_cut_in_proportion_back_to_a_whole_word() -> None:
    text = "one two three four"  # 18 characters
    assert heard_text(text, 0, 100) == ""
    assert heard_text(text, 100, 100) == text
    assert heard_text(text, 150, 100) == text
    assert heard_text(text, 50, 100) == "one two"  # 9 characters in: "three" was not heard whole
    assert heard_text(text, 45, 100) == "one two"  # exactly after the space: "one two " -> "one two"
    assert heard_text(text, 10, 100) == ""  # not even "one"
    assert heard_text(text, 1, 0) == text  # no audio to measure by: nothing to cut


class FakeTrack:
    """What Playback needs of a media track; ``advance`` plays queued samples as a track's recv would."""

    def __init__(self) -> None:
        self.queued = 0
        self.clears = 0
        self.listener: Callable[[int], None] | None = None

    def play(self, samples: Any) -> None:
        self.queued += len(samples)

    def clear(self) -> None:
        self.queued = 0
        self.clears += 1

    def set_play_listener(self, listener: Callable[[int], None] | None) -> None:
        self.listener = listener

    def advance(self, samples: int) -> None:
        taken = min(samples, self.queued)
        self.queued -= taken
        if taken and self.listener is not None:
            self.listener(taken)


def _assistant(conversation: Conversation, item_id: str, transcript: str) -> dict[str, Any]:
    item = {"id": item_id, "object": "realtime.item", "type": "message", "role": "assistant",
            "status": "completed", "content": [{"type": "output_audio", "transcript": transcript}]}
    conversation.add(item)
    return item


def _ledger() -> tuple[Playback, FakeTrack, Conversation, list[dict[str, Any]]]:
    conversation, track, events = Conversation(), FakeTrack(), []
    return Playback(conversation, events.append, track), track, conversation, events


def _audio(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SECOND), np.int16)


def test_started_when_a_response_plays_and_stopped_once_it_ended_and_drained() -> None:
    playback, track, conversation, events = _ledger()
    _assistant(conversation, "item_a", "Hello there.")
    playback.produced("resp_a", "item_a", _audio(0.5))
    assert events == []  # queued, not played
    track.advance(480)
    assert events == [{"type": "output_audio_buffer.started", "response_id": "resp_a"}]
    track.advance(SECOND)  # ran dry (TTS behind), but more audio may come: not stopped
    assert len(events) == 1
    playback.produced("resp_a", "item_a", _audio(0.25))
    playback.response_ended("resp_a")
    assert len(events) == 1
    track.advance(SECOND)
    assert events[1:] == [{"type": "output_audio_buffer.stopped", "response_id": "resp_a"}]
    assert conversation.get("item_a")["content"][0]["transcript"] == "Hello there."  # nothing was cut


def test_a_response_without_audio_starts_and_stops_nothing() -> None:
    playback, _, _, events = _ledger()
    playback.response_ended("resp_text")
    assert events == []


def test_clear_drops_unplayed_audio_and_cuts_the_item_at_what_was_played() -> None:
    playback, track, conversation, events = _ledger()
    _assistant(conversation, "item_a", "one two three four")
    playback.produced("resp_a", "item_a", _audio(1.0))
    playback.response_ended("resp_a")
    track.advance(SECOND // 2)
    playback.clear()
    assert track.clears == 1 and track.queued == 0
    assert types(events) == ["output_audio_buffer.started", "output_audio_buffer.cleared",
                             "conversation.item.truncated"]
    assert events[1] == {"type": "output_audio_buffer.cleared", "response_id": "resp_a"}
    assert events[2] == {"type": "conversation.item.truncated", "item_id": "item_a", "content_index": 0,
                         "audio_end_ms": 500}
    assert conversation.get("item_a")["content"][0]["transcript"] == "one two"
    # Cleared, not stopped; and the cut item's audio now ends where it was cut.
    track.advance(SECOND)
    assert "output_audio_buffer.stopped" not in types(events)
    try:
        playback.truncate("item_a", 0, 600)
    except RealtimeError as error:
        assert error.code == "invalid_value" and error.param == "audio_end_ms"
    else:
        raise AssertionError("a truncate past the cut audio was accepted")


def test_a_requested_clear_answers_even_when_nothing_plays() -> None:
    playback, track, conversation, events = _ledger()
    playback.clear(requested=True)
    assert events == []  # no response has played on this track: no response_id to name
    _assistant(conversation, "item_a", "Hi.")
    playback.produced("resp_a", "item_a", _audio(0.1))
    playback.response_ended("resp_a")
    track.advance(SECOND)
    playback.clear()  # automatic (a cancel after the audio had finished): nothing to say
    assert types(events) == ["output_audio_buffer.started", "output_audio_buffer.stopped"]
    playback.clear(requested=True)
    assert events[-1] == {"type": "output_audio_buffer.cleared", "response_id": "resp_a"}


def test_the_next_response_playing_stops_the_previous_one() -> None:
    playback, track, conversation, events = _ledger()
    _assistant(conversation, "item_a", "First.")
    _assistant(conversation, "item_b", "Second.")
    playback.produced("resp_a", "item_a", _audio(0.1))
    playback.produced("resp_b", "item_b", _audio(0.1))
    track.advance(SECOND)
    assert [(e["type"], e["response_id"]) for e in events] == [
        ("output_audio_buffer.started", "resp_a"), ("output_audio_buffer.stopped", "resp_a"),
        ("output_audio_buffer.started", "resp_b")]


# ---------------------------------------------------------------- conversation.item.truncate on the wire


async def test_truncate_cuts_the_item_and_the_history_at_what_the_client_heard(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    reply = "One two three four five six seven eight nine ten."
    server = make_server(scripted_replies=[reply, "Yes."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("response.create")
        events = await client.response_cycle()
        item_id = events[-1]["response"]["output"][0]["id"]
        samples = sum(len(decode_audio(e["delta"])) for e in events if e["type"] == "response.output_audio.delta")
        duration_ms = samples * 1000 // SECOND
        assert duration_ms > 100

        # Past the end of the audio: invalid_value, for that event, and nothing changes.
        too_far = await client.send("conversation.item.truncate", item_id=item_id, content_index=0,
                                    audio_end_ms=duration_ms + 50)
        error = (await client.wait_for(is_error_for(too_far)))["error"]
        assert (error["code"], error["param"]) == ("invalid_value", "audio_end_ms")
        await client.send("conversation.item.create", item={
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go on."}]})
        created = (await client.wait_for("conversation.item.created"))["item"]["id"]
        not_assistant = await client.send("conversation.item.truncate", item_id=created, content_index=0,
                                          audio_end_ms=0)
        assert (await client.wait_for(is_error_for(not_assistant)))["error"]["code"] == "invalid_value"

        half = duration_ms // 2
        await client.send("conversation.item.truncate", item_id=item_id, content_index=0, audio_end_ms=half)
        truncated = await client.wait_for("conversation.item.truncated")
        assert truncated["item_id"] == item_id
        assert (truncated["content_index"], truncated["audio_end_ms"]) == (0, half)
        await client.send("conversation.item.retrieve", item_id=item_id)
        heard = (await client.wait_for("conversation.item.retrieved"))["item"]["content"][0]["transcript"]
        assert heard == heard_text(reply, half * SECOND // 1000, samples)
        assert heard and reply.startswith(heard + " ")  # whole words, fewer of them
        assert abs(len(heard) - len(reply) / 2) <= len("seven ")

        await client.send("response.create")
        await client.response_cycle()
        assert types(await client.barrier()) == []
    assistant = [m.content for m in llm_requests[-1].messages if m.role == "assistant"]
    assert assistant == [heard]
