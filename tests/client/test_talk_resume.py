"""`talk` keeps its conversation across a dropped connection (the server resumes the session)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from speech_to_speech import cli
from speech_to_speech.audio.wav import read_wav

from .client_harness import voiced_spans, write_turns
from .conftest import ServerFactory
from .cutting_relay import CuttingRelay

REPLY = "One, two, three, four, five, six, seven, eight, nine, ten."


def talk(url: str, question: Path, answer: Path) -> int:
    return cli.main(["talk", "--url", url, "--input-wav", str(question), "--output-wav", str(answer)])


@pytest.mark.parametrize(("after", "lose_s"), [
    ("response.output_audio.delta", 0.3),  # mid-answer
    ("input_audio_buffer.speech_started", 0.3),  # mid-question: what the file sends meanwhile waits in the client
])
def test_talk_with_a_wav_survives_a_cut(make_server: ServerFactory, tmp_path: Path, capsys: Any, after: str,
                                        lose_s: float) -> None:
    server = make_server(scripted_replies=[REPLY], scripted_token_delay_ms=20)
    question = write_turns(tmp_path / "q.wav")
    assert talk(server.ws_url, question, tmp_path / "uncut.wav") == 0
    capsys.readouterr()
    with CuttingRelay(f"ws://127.0.0.1:{server.port}").running() as relay:
        relay.cut_after(after, lose_s=lose_s)
        assert talk(relay.ws_url, question, tmp_path / "cut.wav") == 0
    assert relay.cuts == 1
    assert relay.lost or after.startswith("input"), "the cut came too late to test the replay"
    assert relay.paths == ["/v1/realtime", "/v1/realtime?autostart=0"]
    captured = capsys.readouterr()
    assert captured.out.count(f"Assistant: {REPLY}") == 1
    assert "1 answer(s) to" in captured.err
    uncut, rate = read_wav(tmp_path / "uncut.wav")
    cut, _ = read_wav(tmp_path / "cut.wav")
    assert voiced_spans(cut, rate) == pytest.approx(voiced_spans(uncut, rate), abs=0.03)  # the whole answer
