"""``bench languages``' rows in the figures table: per language and mode, latency, then what was heard and said."""

from __future__ import annotations

from typing import Any

LATENCY = "end_of_speech_to_first_audio_ms"


def _ms(value: Any) -> str:
    return "–" if value is None else f"{value:.0f}"


def _rate(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _turn_ends(figures: dict[str, Any]) -> str:
    ends = figures.get("turn_outcomes") or {}
    return "; turn ends " + ", ".join(f"{k} ×{v}" for k, v in sorted(ends.items())) if ends else ""


def languages_rows(summary: dict[str, Any]) -> list[str]:
    """Two rows per language and mode (``fr_auto``): end of speech -> first audio; heard, answered, understood."""
    rows = []
    for index, (key, figures) in enumerate(summary.items()):
        language, mode = key.split("_", 1)
        stats = figures[LATENCY]
        name = "**languages**" if index == 0 else ""
        rows.append(f"| {name} | {language}, {mode}: end of speech → first audio delta | {_ms(stats['p50'])} | "
                    f"{_ms(stats['p95'])} | {stats['n']} |")
        rows.append(f"| | {language}, {mode}: answered {figures['answered']} of {figures['requests']}; heard as "
                    f"{language} {figures['heard_in_its_language']}, error rate "
                    f"{_rate(figures['heard_error_rate_mean'])}; answer in {language} (Whisper) "
                    f"{figures['answered_in_its_language']}, its error rate "
                    f"{_rate(figures['answer_error_rate_mean'])}{_turn_ends(figures)} | | |")
    return rows
