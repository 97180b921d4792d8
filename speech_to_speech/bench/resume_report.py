"""The README rows of ``bench resume`` (resume times from the figure rows, then counts and the emit rate)
and of ``bench resume --failover`` (the same, and the Redis outage and the journal's cost in Redis)."""

from __future__ import annotations

from typing import Any

LABELS = {
    "cut_to_resumed_ms": "connection cut → ConnectionResumed (client backoff included)",
    "cut_to_first_replayed_ms": "connection cut → first replayed event",
    "kill_to_resumed_ms": "replica killed → ConnectionResumed on the other (client backoff included)",
    "kill_to_first_event_ms": "replica killed → first event after the resume",
    "replica_restart_s": "killed replica started again (s)",
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


def failover_rows(summary: dict[str, Any]) -> list[str]:
    """Rows under the failover times: resumes, losses, how cut answers ended, the outage, the journal's cost."""
    n = summary["sessions"]
    rows = [f"| | resumed on the other replica | {summary['resumed_on_the_other_replica']} of {n} | | |",
            f"| | events lost / duplicates seen / responses ended twice | {summary['events_lost']} / "
            f"{summary['duplicates_seen_by_consumer']} / {summary.get('responses_ended_twice', 0)} | | |",
            f"| | cut answers ended failed `server_lost` / completed before the kill | "
            f"{summary['cut_responses_failed_server_lost']} / {summary['cut_responses_completed_before_the_kill']}"
            " | | |",
            f"| | next turn's request held every earlier turn | {summary['follow_ups_holding_every_earlier_turn']}"
            f" of {n} | | |"]
    down = summary.get("redis_down") or {}
    if "answers_while_down" in down:
        answered = sum(1 for status in down["answers_while_down"] if status == "completed")
        rows.append(f"| | Redis stopped: answers completed / `/ready` | {answered} of "
                    f"{len(down['answers_while_down'])} / {down['ready_while_down']['status']} | | |")
        rows.append(f"| | Redis back empty: failover resumed, next turn held every turn | "
                    f"{_yes(down['failover_after_restart_resumed'])}, {_yes(down['follow_up_holds_history'])} | | |")
    cost = (summary.get("journal_cost") or {}).get("redis", {}).get("audio_delta_100ms")
    memory = (summary.get("journal_cost") or {}).get("memory", {}).get("audio_delta_100ms")
    if cost and memory:
        rows.append(f"| | journal per 100 ms audio delta: memory / with Redis (session path) / Redis writer, µs | "
                    f"{memory['us_per_event']} / {cost['session_path']['us_per_event']} / "
                    f"{cost['redis']['us_per_event']} | | |")
    return rows


def _yes(value: Any) -> str:
    return "yes" if value else "no"
