"""`speech-to-speech bench resume --failover` end to end (two sessions): replicas killed mid-answer, Redis stopped.

Tokens come every 5 ms, not the bench's 20: each answer here repeats the whole conversation, and the
kill still lands mid-answer (it is set off by the count of events the client has read), in a third less time.
"""

from __future__ import annotations

import json
from pathlib import Path

from speech_to_speech import cli
from speech_to_speech.bench.report import spoken_rows


def test_bench_failover_resumes_every_killed_session_on_the_other_replica(redis_binary: str, tmp_path: Path) -> None:
    output = tmp_path / "failover.json"
    assert cli.main(["bench", "resume", "--failover", "--sessions", "2", "--seed", "2", "--reconnect-delay-ms", "0",
                     "--scripted_token_delay_ms", "5",
                     "--output", str(output)]) == 0
    result = json.loads(output.read_text())
    assert result["benchmark"] == "failover" and result["command"].startswith("speech-to-speech")
    summary, samples = result["summary"], result["samples"]
    assert summary["sessions"] == 2 and summary["failed"] == 0
    assert [s["owner"] for s in samples] == [0, 1] and [s["resumed_on"] for s in samples] == [1, 0]
    assert summary["resumed_on_the_other_replica"] == 2 and summary["kill_to_resumed_ms"]["n"] == 2
    assert summary["events_lost"] == 0 and summary["duplicates_seen_by_consumer"] == 0
    assert summary["responses_ended_twice"] == 0
    assert summary["cut_responses_failed_server_lost"] + summary["cut_responses_completed_before_the_kill"] == 2
    assert summary["cut_responses_the_start_of_the_answer"] == 2
    assert summary["follow_ups_completed"] == summary["follow_ups_holding_every_earlier_turn"] == 2
    down = summary["redis_down"]
    assert down["answers_while_down"] == ["completed", "completed"]
    assert down["ready_while_down"] == {"status": 503, "reasons": ["session store unreachable"]}
    assert down["store_writes_while_down"]["failed"] + down["store_writes_while_down"]["dropped"] > 0
    assert down["failover_after_restart_resumed"] and down["follow_up_holds_history"] and down["events_lost"] == 0
    for kind in ("audio_delta_100ms", "transcript_delta"):
        redis = summary["journal_cost"]["redis"][kind]
        assert redis["session_path"]["events_per_s"] > 0 and redis["redis"]["events_per_s"] > 0
        assert redis["writes"].get("ok", 0) > 0 and "dropped" not in redis["writes"]
        assert summary["journal_cost"]["memory"][kind]["events_per_s"] > 0
    rows = spoken_rows("failover", summary)
    assert rows[0].startswith("| **failover** |") and any("resumed on the other replica | 2 of 2" in r for r in rows)


def test_bench_failover_with_a_replica_slow_to_die_resumes_every_session_on_the_other(
        redis_binary: str, tmp_path: Path) -> None:
    """--death-ms: the owner frozen, the client cut and resumed on the other at once, SIGKILL after."""
    output = tmp_path / "failover.json"
    assert cli.main(["bench", "resume", "--failover", "--sessions", "2", "--seed", "3", "--reconnect-delay-ms", "0",
                     "--scripted_token_delay_ms", "5", "--death-ms", "40", "--output", str(output)]) == 0
    result = json.loads(output.read_text())
    summary = result["summary"]
    assert result["config"]["death_ms"] == 40
    assert summary["resumed_on_the_other_replica"] == 2 and summary["kill_to_resumed_ms"]["n"] == 2
    assert summary["events_lost"] == summary["duplicates_seen_by_consumer"] == summary["responses_ended_twice"] == 0
    assert summary["follow_ups_holding_every_earlier_turn"] == 2
