"""`speech-to-speech bench resume` end to end (a small run): every cut session resumed whole, and the README rows."""

from __future__ import annotations

import json
from pathlib import Path

from speech_to_speech import cli
from speech_to_speech.bench.report import markdown


def test_bench_resume_brings_back_every_cut_answer_whole_and_reports_it(tmp_path: Path) -> None:
    output = tmp_path / "resume.json"
    assert cli.main(["bench", "resume", "--sessions", "4", "--seed", "3", "--reconnect-delay-ms", "0",
                     "--output", str(output)]) == 0
    result = json.loads(output.read_text())
    summary, samples = result["summary"], result["samples"]
    assert result["benchmark"] == "resume" and result["command"].startswith("speech-to-speech")
    assert result["environment"]["load_average"] is not None
    assert summary["resumes_attempted"] == 4 and summary["resumes_succeeded"] == 4 and summary["failed"] == 0
    assert summary["duplicates_seen_by_consumer"] == 0
    assert summary["events_lost"] == 0 and summary["events_extra"] == 0 and summary["audio_bytes_lost"] == 0
    assert summary["answers_equal_to_reference"] == 4
    assert summary["cut_to_resumed_ms"]["n"] == 4 and summary["cut_to_first_replayed_ms"]["n"] == 4
    assert summary["reference"]["audio_bytes"] > 0
    assert len(samples) == 4
    for sample in samples:
        assert sample["cuts"] == 1 and sample["resumes"] == 1
        # the cut came before response.done, so the rest of the answer had to come from the journal
        assert sample["events_replayed"] >= 1
        assert sample["cut_to_first_replayed_ms"] >= sample["cut_to_resumed_ms"] >= 0
    for kind in ("audio_delta_100ms", "transcript_delta"):
        assert summary["emit"][kind]["events_per_s"] > 0
    table = markdown({"resume": result})
    assert "| **resume** | connection cut → ConnectionResumed" in table
    assert "| | resumes succeeded | 4 of 4 | | |" in table
