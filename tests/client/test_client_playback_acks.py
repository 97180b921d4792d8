"""talk tells a server that takes playback.ack how far each answer was heard; the two session policies as flags.

First the rules, by driving a ClientSession with scripted server events and
reading its play-out buffer as a speaker would; then `talk` against a real
scripted server, where an ``ack_only`` session's history holds what was acked.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech import cli
from speech_to_speech.client import listen_and_play_realtime
from speech_to_speech.client.cli import client_config
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest

from .client_harness import FakeTransport, audio_delta, write_turns
from .conftest import ServerFactory

RATE = 24000
SPEECH_STARTED = {"type": "input_audio_buffer.speech_started", "audio_start_ms": 0, "item_id": "user1"}


def created(supports_playback_ack: bool | None) -> dict[str, Any]:
    capabilities = {} if supports_playback_ack is None else {"supports_playback_ack": supports_playback_ack}
    return {"type": "session.created", "session": {"id": "sess_1", "capabilities": capabilities}}


def answer(transport: FakeTransport, seconds: float = 1.0, *, done: bool = False, **delta: Any) -> int:
    """Response r1 with ``seconds`` of audio in item a1 (all of it arrived when ``done``); returns its samples."""
    event = {**audio_delta("r1", "a1", seconds), **delta}
    transport.feed({"type": "response.created", "response": {"id": "r1"}}, event)
    if done:
        transport.feed({"type": "response.output_audio.done", "response_id": "r1", "item_id": "a1"})
    return len(base64.b64decode(event["delta"])) // 2


def acked(transport: FakeTransport) -> list[int]:
    return [e["played_ms"] for e in transport.sent_of("playback.ack")]


def play(transport: FakeTransport, seconds: float) -> None:
    transport.playback.read(round(seconds * RATE))


@pytest.mark.parametrize("capability", [None, False])
def test_a_server_that_does_not_take_acks_is_never_sent_one(capability: bool | None) -> None:
    transport = FakeTransport(jitter_ms=0)
    transport.feed(created(capability))
    answer(transport, done=True)
    for step in range(5):
        play(transport, 0.25)
        transport.session.report_playback(now=step * 1.0)
    transport.feed(SPEECH_STARTED)
    assert transport.sent_of("playback.ack") == []


def test_acks_report_the_play_head_at_most_every_quarter_second() -> None:
    transport = FakeTransport(jitter_ms=0)
    transport.feed(created(True))
    answer(transport)
    play(transport, 0.1)
    transport.session.report_playback(now=10.0)
    play(transport, 0.1)
    transport.session.report_playback(now=10.1)  # too soon after the last one
    transport.session.report_playback(now=10.25)
    transport.session.report_playback(now=10.6)  # nothing more was played: nothing to say
    assert transport.sent_of("playback.ack") == [
        {"event_id": "evt_1", "type": "playback.ack", "response_id": "r1", "item_id": "a1", "played_ms": 100},
        {"event_id": "evt_2", "type": "playback.ack", "response_id": "r1", "item_id": "a1", "played_ms": 200},
    ]


def test_an_item_played_to_its_end_is_acked_whole_at_once() -> None:
    transport = FakeTransport(jitter_ms=0)
    transport.feed(created(True))
    answer(transport, 0.7, done=True)
    play(transport, 0.3)
    transport.session.report_playback(now=0.0)
    play(transport, 0.4)
    transport.session.report_playback(now=0.01)  # within the interval, but it is the end
    play(transport, 0.4)
    transport.session.report_playback(now=5.0)
    assert acked(transport) == [300, 700]


def test_audio_still_arriving_is_not_the_end() -> None:
    transport = FakeTransport(jitter_ms=0)
    transport.feed(created(True))
    answer(transport, 0.5)
    play(transport, 0.5)
    transport.session.report_playback(now=0.0)
    transport.feed(audio_delta("r1", "a1", 0.5))
    play(transport, 0.2)
    transport.session.report_playback(now=0.1)
    assert acked(transport) == [500]


def test_a_cut_answer_is_truncated_then_acked_where_it_stopped_and_never_again() -> None:
    transport = FakeTransport(jitter_ms=0)
    transport.feed(created(True))
    answer(transport)
    play(transport, 0.1)
    transport.session.report_playback(now=0.0)
    play(transport, 0.15)
    transport.feed(SPEECH_STARTED)
    transport.session.report_playback(now=9.0)
    assert [(e["type"], e.get("played_ms", e.get("audio_end_ms"))) for e in transport.sent] == [
        ("playback.ack", 100), ("conversation.item.truncate", 250), ("playback.ack", 250)]


def test_an_ack_never_goes_past_the_audio_length_the_server_gave() -> None:
    transport = FakeTransport(jitter_ms=0)
    transport.feed(created(True))
    answer(transport, 0.5, metadata={"audio_duration_ms": 420})
    play(transport, 0.5)
    transport.session.report_playback(now=0.0)
    assert acked(transport) == [420]


def test_acks_follow_a_resampling_speaker_to_the_exact_end() -> None:
    transport = FakeTransport(tmp_out_rate=44100, jitter_ms=0)
    transport.feed(created(True))
    answer(transport, 0.333, done=True)
    for step in range(10):
        transport.playback.read(4410)
        transport.session.report_playback(now=step * 0.1)
    assert acked(transport)[-1] == 333  # all of it, in the server's milliseconds


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 9000), st.floats(0.0, 0.4)), min_size=1, max_size=30),
       seconds=st.floats(0.05, 1.5), jitter_ms=st.sampled_from([0, 120]))
def test_acks_are_cumulative_throttled_and_never_ahead_of_the_speaker(
        steps: list[tuple[int, float]], seconds: float, jitter_ms: int) -> None:
    transport = FakeTransport(jitter_ms=jitter_ms)
    transport.feed(created(True))
    samples = answer(transport, seconds, done=True)
    total_ms = samples * 1000 // RATE
    played, now, sent_at = 0, 0.0, []
    for frames, wait in [*steps, (RATE * 2, 0.0)]:  # finally the speaker plays out whatever is left
        played += transport.playback.read(frames)[1]
        now += wait
        before = len(acked(transport))
        transport.session.report_playback(now=now)
        new = acked(transport)[before:]
        assert len(new) <= 1
        if new:
            assert new[0] <= played * 1000 // RATE or (new[0] == total_ms and played == samples)
            sent_at.append((now, new[0]))
    heads = [ms for _, ms in sent_at]
    assert heads == sorted(set(heads))  # cumulative: every ack moves forward
    assert heads[-1] == total_ms  # and the end is always reported
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(sent_at)]
    assert all(gap >= 0.25 for gap in gaps[:-1])  # only the final one may come sooner


# ---------------------------------------------------------------- the policy flags


def parse(*argv: str) -> Any:
    parser, _ = cli.build_parser()
    return parser.parse_args(argv)


@pytest.mark.parametrize("command", ["talk", "local"])
def test_the_policy_flags_go_into_the_session_update(command: str) -> None:
    args = parse(command, "--playback-commit-policy", "ack_only", "--overlap-policy", "listen_only")
    session = client_config(args, args.client_fields).session_update()["session"]
    assert (session["playback_commit_policy"], session["overlap_policy"]) == ("ack_only", "listen_only")


def test_unset_policies_leave_the_server_defaults_alone() -> None:
    args = parse("talk")
    session = client_config(args, args.client_fields).session_update()["session"]
    assert "playback_commit_policy" not in session and "overlap_policy" not in session


def test_an_unknown_policy_is_a_usage_error(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse("talk", "--overlap-policy", "shout_over")
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


# ---------------------------------------------------------------- over the wire, with the real server

FIRST_ANSWER = "The first answer is this sentence, spoken in full."  # 0.5 s of scripted speech


def test_the_server_echoes_the_policies_and_takes_every_ack_talk_sends(make_server: ServerFactory,
                                                                       tmp_path: Path) -> None:
    server = make_server(scripted_replies=["Fine."])
    args = parse("talk", "--url", server.ws_url, "--input-wav", str(write_turns(tmp_path / "q.wav")),
                 "--output-wav", str(tmp_path / "a.wav"), "--playback-commit-policy", "ack_only",
                 "--overlap-policy", "listen_only", "--no-show-transcript")
    seen: list[dict[str, Any]] = []
    asyncio.run(asyncio.wait_for(listen_and_play_realtime(client_config(args, args.client_fields),
                                                          on_event=seen.append), 60))
    (hello,) = [e for e in seen if e["type"] == "session.created"]
    assert hello["session"]["capabilities"]["supports_playback_ack"] is True
    updated = next(e for e in seen if e["type"] == "session.updated")["session"]
    assert (updated["playback_commit_policy"], updated["overlap_policy"]) == ("ack_only", "listen_only")
    assert [e for e in seen if e["type"] == "error"] == []  # every ack was taken
    (done,) = [e["response"] for e in seen if e["type"] == "response.done"]
    last = [e for e in seen if e["type"] == "playback.acknowledged"][-1]
    assert last["item_id"] == done["output"][0]["id"]
    assert last["event"]["history_committed"] is True  # the whole answer was heard, and said so


def test_with_ack_only_talk_acks_the_first_answer_into_the_second_requests_history(
        make_server: ServerFactory, tmp_path: Path, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["First question?", "Second question?"],
                         scripted_replies=[FIRST_ANSWER, "Two."])
    question = write_turns(tmp_path / "q.wav", turns=2, pause_s=1.8)
    argv = ["talk", "--url", server.ws_url, "--input-wav", str(question), "--output-wav", str(tmp_path / "a.wav"),
            "--playback-commit-policy", "ack_only"]
    assert cli.main(argv) == 0
    assert len(llm_requests) == 2
    second = [(m.role, m.content) for m in llm_requests[1].messages if m.role in ("user", "assistant")]
    assert second == [("user", "First question?"), ("assistant", FIRST_ANSWER), ("user", "Second question?")]
