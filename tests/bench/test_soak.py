"""`speech-to-speech bench soak` end to end (a small run): the JSON's figures, and nothing left behind."""

from __future__ import annotations

import json
from pathlib import Path

from speech_to_speech import cli


def test_bench_soak_serves_every_session_and_the_server_keeps_nothing(tmp_path: Path) -> None:
    output = tmp_path / "soak.json"
    assert cli.main(["bench", "soak", "--sessions", "16", "--turns", "2", "--concurrency", "2",
                     "--disconnect-share", "0.5", "--malformed-share", "0.5", "--output", str(output)]) == 0
    result = json.loads(output.read_text())
    summary = result["summary"]
    assert result["benchmark"] == "soak"
    assert summary["sessions_served"] == 16 and summary["failed"] == 0
    assert summary["disconnected"] > 0 and summary["malformed_sent"] > 0
    assert summary["errors_returned"] == summary["malformed_sent"] and summary["errors_missing"] == 0
    assert summary["unexpected_errors"] == 0
    before, after = summary["server_before"], summary["server_after"]
    assert after["threads"] == before["threads"] and after["fds"] == before["fds"]
    assert summary["pool_after"] == {"available": 2, "size": 2, "rebuilds": 0}
    assert summary["server_exit_code"] == 0
    assert len(result["samples"]) == 16
