"""The README rows of ``bench echo``: a real barge-in over the echo and without it, then what the echo did with
cancellation off and on, and the canceller's own figures.

The barge-in times are handed to :func:`report.figure_rows` keyed by their label, as ``bench load``'s are.
"""

from __future__ import annotations

from typing import Any

LABELS = {
    "with_echo": "start of speech over the echo → response cancelled (cancellation on)",
    "without_echo": "· the same without the echo",
}


def echo_figures(summary: dict[str, Any]) -> dict[str, Any]:
    """The barge-in times, with and without the echo, keyed by their row's label."""
    barge = summary["barge_in"]
    return {label: barge[key] for key, label in LABELS.items() if barge.get(key, {}).get("n")}


def echo_counts(summary: dict[str, Any]) -> list[str]:
    """What the echo did with cancellation off and on, then the canceller's offline figures."""
    off, on = summary["off"], summary["on"]
    rows = [f"| | answers played out (cancellation off / on) | {off['answered']} of {off['trials']} / "
            f"{on['answered']} of {on['trials']} | | |",
            f"| | runs that interrupted themselves (off / on) | {off['runs_with_self_interruption']} / "
            f"{on['runs_with_self_interruption']} | | |",
            f"| | the assistant's words heard as the user's, turns (off / on) | {off['echo_turns']} / "
            f"{on['echo_turns']} | | |"]
    offline = summary.get("offline") or {}
    if offline:
        erle = ", ".join(f"{delay} late {db:.0f} dB" for delay, db in offline["erle_db"].items())
        rows += [f"| | echo removed offline (ERLE) | {erle} | | |",
                 f"| | canceller CPU, one session / four | {offline['cpu_s_per_audio_s']:.1%} / "
                 f"{offline['four_sessions_cpu_s_per_audio_s']:.1%} of a core | | |"]
    return rows
