"""The README rows of ``bench resume``: resume times from the figure rows, then counts and the emit rate."""

from __future__ import annotations

from typing import Any

LABELS = {
    "cut_to_resumed_ms": "connection cut → ConnectionResumed (client backoff included)",
    "cut_to_first_replayed_ms": "connection cut → first replayed event",
}


def resume_rows(summary: dict[str, Any]) -> list[str]:
    """Rows under the resume times: what came back, what was lost or doubled, what the journal held."""
    replayed, journal = summary["events_replayed"], summary["journal_bytes_per_session"]
    emit = summary.get("emit") or {}
    rows = [f"| | resumes succeeded | {summary['resumes_succeeded']} of {summary['resumes_attempted']} | | |",
            f"| | events replayed per resume (min / mean / max) | {_n(replayed['min'])} / {_n(replayed['mean'])}"
            f" / {_n(replayed['max'])} | | |",
            f"| | duplicates seen / events lost / audio bytes lost | {summary['duplicates_seen_by_consumer']} / "
            f"{summary['events_lost']} / {summary['audio_bytes_lost']} | | |",
            f"| | journal per session (no acks, one answer) | {_n(journal['max'])} bytes | | |"]
    audio, text = emit.get("audio_delta_100ms"), emit.get("transcript_delta")
    if audio and text:
        rows.append(f"| | emit (stamp + serialise + journal), events/s | 100 ms audio delta {audio['events_per_s']:,}"
                    f"; transcript delta {text['events_per_s']:,} | | |")
    return rows


def _n(value: Any) -> str:
    return "–" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}".removesuffix(".0")
