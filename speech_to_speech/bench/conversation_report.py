"""The README rows of ``bench conversation``: latency over the whole conversation, early and late, the prompt
tokens read per turn, then turns answered, recall and accuracy.

The figures are handed to :func:`report.figure_rows` as a summary keyed by their key or label, so they are
formatted as every other benchmark's.
"""

from __future__ import annotations

from typing import Any

from speech_to_speech.bench.conversation_summary import EARLY_MS, LAST_MS, RATIO, TOKENS
from speech_to_speech.bench.turns import FIGURES, LATENCY


def _times(value: float | None) -> str:
    return "–" if value is None else f"×{value:.2f}"


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def conversation_figures(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Key or label -> p50/p95 block: every turn, turns 2–6, the last five, the stages, tokens read."""
    return {
        LATENCY: summary[LATENCY],
        "· over turns 2–6": summary[EARLY_MS],
        f"· over the last five turns ({_times(summary[RATIO])} of turns 2–6)": summary[LAST_MS],
        **{key: summary[key] for key in FIGURES if key != LATENCY and key in summary},
        "prompt tokens the LLM read at each turn (tokens, not ms)": summary[TOKENS],
    }


def conversation_counts(summary: dict[str, Any]) -> list[str]:
    """Turns answered, recall of earlier turns' facts, right answers overall and by kind."""
    recall, scored = summary["recall"], summary["scored"]
    kinds = ", ".join(f"{kind} {stats['right']}/{stats['n']}" for kind, stats in summary["by_kind"].items())
    return [f"| | turns answered ({summary['conversations']} conversation(s) in one session each) | "
            f"{summary['answered']} of {summary['turns']} | | |",
            f"| | facts of earlier turns recalled | {recall['right']} of {recall['n']} "
            f"({_percent(recall['rate'])}) | | |",
            f"| | right answers of the scored turns | {scored['right']} of {scored['n']} "
            f"({_percent(scored['rate'])}; {kinds}) | | |"]
