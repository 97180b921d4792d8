"""The client's playback rules: scripted server events through a fake transport, then over the wire.

Clear on speech_started only when interruption is on; always on a cancelled
response.done or output_audio_buffer.cleared; a cut item is truncated at the
position that was actually played.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.wav import read_wav, write_wav
from speech_to_speech.client import RealtimeAudioClientConfig, SessionSummary, listen_and_play_realtime
from speech_to_speech.client.errors import SessionLimitReached, SessionRejected
from speech_to_speech.testing.client_audio import silence, tone

from .client_harness import FakeTransport, audio_delta, response_done, voiced_spans
from .conftest import ServerFactory

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
    # No "type": the server keeps its own turn detection (semantic_vad when it has a detector).
    assert transport.config.session_update()["session"]["audio"]["input"]["turn_detection"] == {
        "interrupt_response": False}


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
                      "turn_detection": {"interrupt_response": True, "threshold": 0.8}},
            "output": {"format": {"type": "audio/pcm", "rate": 22050}, "voice": "heart"},
        },
    }}


# ---------------------------------------------------------------- over the wire, with the real server

LONG_REPLY = "This answer is long enough that the user can talk over it while it is still playing."  # 0.85 s
SHORT_REPLY = "Okay."


def overlapping_turns(path: Path) -> Path:
    """A question, then a second utterance that starts while the first answer is playing."""
    rate = 16000
    write_wav(path, np.concatenate([silence(0.2, rate), tone(0.6, rate), silence(0.6, rate), tone(0.6, rate),
                                    silence(0.2, rate)]), rate)
    return path


def run_file(make_server: ServerFactory, tmp_path: Path, **config: object) -> tuple[SessionSummary, list[float]]:
    server = make_server(scripted_transcripts=["Tell me something.", "Wait."],
                         scripted_replies=[LONG_REPLY, SHORT_REPLY])
    client = RealtimeAudioClientConfig(url=server.ws_url, input_wav=overlapping_turns(tmp_path / "q.wav"),
                                       output_wav=tmp_path / "a.wav", show_transcript=False, **config)
    summary = asyncio.run(asyncio.wait_for(listen_and_play_realtime(client), 60))
    samples, rate = read_wav(tmp_path / "a.wav")
    return summary, voiced_spans(samples, rate)


def test_barge_in_cuts_the_answer_and_truncates_it_where_playback_stopped(make_server: ServerFactory,
                                                                          tmp_path: Path) -> None:
    summary, spans = run_file(make_server, tmp_path)
    # The scripted server finished generating at once, so only the client's playback was still going.
    assert [r["status"] for r in summary.responses] == ["completed", "completed"]
    (truncate,) = [e for e in summary.sent if e["type"] == "conversation.item.truncate"]
    assert truncate["item_id"] == summary.responses[0]["output"][0]["id"]
    heard, answer = spans
    assert truncate["audio_end_ms"] == pytest.approx(heard * 1000, abs=25)  # exactly what was played
    assert heard < len(LONG_REPLY) * 0.01 - 0.2  # it was cut short
    assert answer == pytest.approx(len(SHORT_REPLY) * 0.01, abs=0.03)


def test_without_interruption_the_answer_plays_to_the_end(make_server: ServerFactory, tmp_path: Path) -> None:
    summary, spans = run_file(make_server, tmp_path, interrupt_response=False)
    assert [r["status"] for r in summary.responses] == ["completed", "completed"]
    assert [e for e in summary.sent if e["type"] == "conversation.item.truncate"] == []
    assert spans == [pytest.approx(len(LONG_REPLY) * 0.01, abs=0.03), pytest.approx(len(SHORT_REPLY) * 0.01, abs=0.03)]


def test_a_blocked_mic_holds_the_file_while_the_assistant_speaks(make_server: ServerFactory, tmp_path: Path) -> None:
    summary, spans = run_file(make_server, tmp_path, block_mic_during_playback=True)
    # The second utterance reaches the server only after the answer played: nothing to interrupt.
    assert [r["status"] for r in summary.responses] == ["completed", "completed"]
    assert spans == [pytest.approx(len(LONG_REPLY) * 0.01, abs=0.03), pytest.approx(len(SHORT_REPLY) * 0.01, abs=0.03)]
