"""The README rows of ``bench echo``: a real barge-in over the echo and without it, then what the echo did with
cancellation off and on, and the canceller's own figures.

The barge-in times are handed to :func:`report.figure_rows` keyed by their label, as ``bench load``'s are.
"""

from __future__ import annotations

from typing import Any

LABELS = {
    "with_echo": "start of speech over the echo → speech_started (cancellation on)",
    "without_echo": "· the same without the echo",
}
# A result from before the barge-in was timed to speech_started (it has no "played_out" count) timed it to the
# response's cancellation.
CANCELLED_LABELS = {**LABELS, "with_echo": "start of speech over the echo → response cancelled (cancellation on)"}


def echo_figures(summary: dict[str, Any]) -> dict[str, Any]:
    """The barge-in times, with and without the echo, keyed by their row's label."""
    barge = summary["barge_in"]
    labels = LABELS if "played_out" in barge else CANCELLED_LABELS
    return {label: barge[key] for key, label in labels.items() if barge.get(key, {}).get("n")}


def echo_counts(summary: dict[str, Any]) -> list[str]:
    """What the echo did with cancellation off and on and with sessions at once, then the canceller's cost."""
    off, on, barge = summary["off"], summary["on"], summary["barge_in"]
    rows = [f"| | barge-in trials: the answer played out first / not heard | {barge['played_out']} / "
            f"{barge['not_heard']} | | |"] if "played_out" in barge else []
    rows += [f"| | answers played out (cancellation off / on) | {off['answered']} of {off['trials']} / "
            f"{on['answered']} of {on['trials']} | | |",
            f"| | runs that interrupted themselves (off / on) | {off['runs_with_self_interruption']} / "
            f"{on['runs_with_self_interruption']} | | |",
            f"| | the assistant's words heard as the user's, turns (off / on) | {off['echo_turns']} / "
            f"{on['echo_turns']} | | |"]
    at_once = summary.get("at_once")
    if at_once:
        rows.append(f"| | {at_once['sessions']} sessions at once, cancellation on: answers played out / runs that "
                    f"interrupted themselves | {at_once['answered']} of {at_once['sessions']} / "
                    f"{at_once['runs_with_self_interruption']} | | |")
    one, together = summary.get("server_one_at_a_time") or {}, (at_once or {}).get("server") or {}
    if at_once and one.get("cpu_s_per_audio_s") and together.get("cpu_s_per_audio_s"):
        rows.append(f"| | server's canceller CPU per second of audio, one session / {at_once['sessions']} at once "
                    f"| {one['cpu_s_per_audio_s']:.1%} / {together['cpu_s_per_audio_s']:.1%} "
                    f"({together['share_of_a_core']:.1%} of a core in all) | | |")
    offline = summary.get("offline") or {}
    if offline:
        erle = ", ".join(f"{delay} late {db:.0f} dB" for delay, db in offline["erle_db"].items())
        rows += [f"| | echo removed offline (ERLE) | {erle} | | |",
                 f"| | canceller CPU, one session / four | {offline['cpu_s_per_audio_s']:.1%} / "
                 f"{offline['four_sessions_cpu_s_per_audio_s']:.1%} of a core | | |"]
    return rows
