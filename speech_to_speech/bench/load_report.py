"""The README rows of ``bench load``: each phase's end of speech -> first audio with its ratio to alone,
then the requests answered per phase and the responses that ended otherwise.

The figures are handed to :func:`report.figure_rows` as a summary keyed by their label, so they are
formatted as every other benchmark's.
"""

from __future__ import annotations

from typing import Any

from speech_to_speech.bench.load import ALONE, BUSY, SLOWER, TWO
from speech_to_speech.bench.turns import LATENCY

SHORT = {ALONE: "alone", BUSY: "busy neighbour", TWO: "two at once"}


def _times(value: float | None) -> str:
    return "–" if value is None else f"×{value:.2f}"


def load_figures(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Label -> p50/p95 block of each phase's latency (and of the slower answer of each pair), in run order."""
    phases = summary["phases"]
    figures: dict[str, dict[str, Any]] = {}
    if ALONE in phases:
        figures["end of speech → first audio delta, alone"] = phases[ALONE][LATENCY]
    if BUSY in phases:
        share = (phases[BUSY].get("neighbour") or {}).get("busy_share")
        got = f"; it ran {share:.2f} of a core" if share is not None else ""
        figures[f"· beside a process spinning on one core ({_times(summary['busy_neighbour_ratio'])}{got})"] = \
            phases[BUSY][LATENCY]
    if TWO in phases:
        figures[f"· two sessions speaking at the same moment ({_times(summary['two_at_once_ratio'])})"] = \
            phases[TWO][LATENCY]
        figures[f"· the slower answer of each pair ({_times(summary['two_at_once_slowest_ratio'])}; the slowest "
                f"{_times(summary['two_at_once_slowest_max_ratio'])})"] = phases[TWO][SLOWER]
    return figures


def load_counts(summary: dict[str, Any]) -> list[str]:
    """The rows under the figures: requests answered per phase, responses that ended otherwise."""
    phases = summary["phases"]
    names = " / ".join(SHORT[phase] for phase in phases)
    counts = " / ".join(f"{stats['answered']} of {stats['requests']}" for stats in phases.values())
    rows = [f"| | requests answered ({names}) | {counts} | | |"]
    ended = [f"{SHORT[phase]}: " + ", ".join(f"{k} ×{v}" for k, v in stats["not_completed"].items())
             for phase, stats in phases.items() if stats.get("not_completed")]
    if ended:
        rows.append(f"| | responses not completed | {'; '.join(ended)} | | |")
    return rows
