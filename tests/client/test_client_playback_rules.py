"""The client's playback rules, driven by scripted server events through a fake transport.

Clear on speech_started only when interruption is on; always on a cancelled
response.done or output_audio_buffer.cleared; a cut item is truncated at the
position that was actually played.
"""

from __future__ import annotations

import pytest
from client_harness import FakeTransport, audio_delta, response_done

from speech_to_speech.client.errors import SessionLimitReached, SessionRejected

SPEECH_STARTED = {"type": "input_audio_buffer.speech_started", "audio_start_ms": 0, "item_id": "user1"}


def playing(transport: FakeTransport, heard_s: float) -> None:
    """A response with one second of audio, of which ``heard_s`` has been played."""
    transport.feed({"type": "response.created", "response": {"id": "r1"}}, audio_delta("r1", "a1", 1.0))
    transport.playback.read(int(heard_s * 24000))


def test_barge_in_with_interruption_on_clears_and_truncates_at_the_heard_position() -> None:
    transport = FakeTransport(jitter_ms=0)
    playing(transport, 0.25)
    transport.feed(SPEECH_STARTED)
    assert transport.sent_of("conversation.item.truncate") == [
        {"event_id": "evt_1", "type": "conversation.item.truncate", "item_id": "a1", "content_index": 0,
         "audio_end_ms": 250}
    ]
    assert transport.playback.read(480)[1] == 0


def test_with_interruption_off_user_speech_does_not_cut_the_reply() -> None:
    transport = FakeTransport(jitter_ms=0, interrupt_response=False)
    playing(transport, 0.25)
    transport.feed(SPEECH_STARTED, {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 600})
    assert transport.sent_of("conversation.item.truncate") == []
    assert transport.playback.read(480)[1] == 480
    assert transport.config.session_update()["session"]["audio"]["input"]["turn_detection"] == {
        "type": "server_vad", "interrupt_response": False}


@pytest.mark.parametrize("interrupt", [True, False])
def test_a_cancelled_response_always_clears_its_audio(interrupt: bool) -> None:
    transport = FakeTransport(jitter_ms=0, interrupt_response=interrupt)
    playing(transport, 0.5)
    transport.feed(response_done("r1", "cancelled"))
    assert [e["audio_end_ms"] for e in transport.sent_of("conversation.item.truncate")] == [500]
    assert transport.playback.read(480)[1] == 0
    transport.feed(audio_delta("r1", "a1", 0.2))  # stale audio after the cancel
    assert transport.playback.read(480)[1] == 0


@pytest.mark.parametrize("interrupt", [True, False])
def test_output_audio_buffer_cleared_always_clears(interrupt: bool) -> None:
    transport = FakeTransport(jitter_ms=0, interrupt_response=interrupt)
    playing(transport, 0.1)
    transport.feed({"type": "output_audio_buffer.cleared", "response_id": "r1"})
    assert [e["audio_end_ms"] for e in transport.sent_of("conversation.item.truncate")] == [100]
    assert not transport.playback.speaking


def test_a_completed_response_plays_out_and_is_never_truncated() -> None:
    transport = FakeTransport(jitter_ms=0)
    playing(transport, 0.2)
    transport.feed({"type": "response.output_audio.done", "response_id": "r1", "item_id": "a1"},
                   response_done("r1"))
    assert transport.playback.read(24000)[1] == int(0.8 * 24000)
    transport.feed(SPEECH_STARTED)
    assert transport.sent_of("conversation.item.truncate") == []


def test_a_new_reply_after_a_barge_in_plays() -> None:
    transport = FakeTransport(jitter_ms=0)
    playing(transport, 0.1)
    transport.feed(response_done("r1", "cancelled"), SPEECH_STARTED,
                   {"type": "response.created", "response": {"id": "r2"}}, audio_delta("r2", "a2", 0.1))
    assert transport.playback.read(480)[1] == 480


def test_the_mic_is_blocked_while_the_assistant_speaks_only_when_asked() -> None:
    plain, blocking = FakeTransport(jitter_ms=0), FakeTransport(jitter_ms=0, block_mic_during_playback=True)
    for transport in (plain, blocking):
        playing(transport, 0.1)
    assert not plain.session.mic_blocked()
    assert blocking.session.mic_blocked()


def test_the_session_limit_is_a_clear_error() -> None:
    transport = FakeTransport()
    with pytest.raises(SessionLimitReached, match="session limit"):
        transport.feed({"type": "error", "error": {"type": "invalid_request_error", "code": "session_limit_reached",
                                                   "message": "All 1 pipeline(s) are busy; try again later."}})


def test_a_rejected_session_update_is_a_clear_error() -> None:
    transport = FakeTransport()
    transport.session.start()
    update_id = transport.sent[0]["event_id"]
    with pytest.raises(SessionRejected, match="voice"):
        transport.feed({"type": "error", "error": {"type": "invalid_request_error", "code": "invalid_value",
                                                   "message": "bad voice", "event_id": update_id}})


def test_the_session_update_carries_every_setting() -> None:
    transport = FakeTransport(send_rate=16000, recv_rate=22050, voice="heart", instructions="Be brief.",
                              vad_threshold=0.8, tools=[{"type": "function", "name": "noop"}])
    assert transport.config.session_update() == {"type": "session.update", "session": {
        "type": "realtime",
        "instructions": "Be brief.",
        "tools": [{"type": "function", "name": "noop"}],
        "extensions": ["speech_to_speech.input_audio_transcription.snapshot"],
        "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": 16000},
                      "turn_detection": {"type": "server_vad", "interrupt_response": True, "threshold": 0.8}},
            "output": {"format": {"type": "audio/pcm", "rate": 22050}, "voice": "heart"},
        },
    }}
