"""The README's table of ``bench quality`` results: one row per model (per result file)."""

from __future__ import annotations

from typing import Any

CATEGORIES = ("fact", "arithmetic", "conversion", "instruction", "multiturn", "tool")
HEADER = ("| LLM | accuracy | " + " | ".join(CATEGORIES) + " | tool calls P / R | end of speech → first audio "
          "p50 (ms) |")
RULE = "|---|---:|" + "---:|" * len(CATEGORIES) + "---:|---:|"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def model_name(result: dict[str, Any]) -> str:
    """The LLM a result was measured with, as the environment recorded it (its file name for a path)."""
    model = str(result["environment"]["server"]["models"].get("llm", "?"))
    flags = result["environment"]["server"].get("flags") or {}
    backend = flags.get("llm") or result["environment"]["server"]["pipeline"].get("llm", "")
    name = model.split(" (")[0].rstrip("/").rsplit("/", 1)[-1]
    return f"{name} ({backend})" if backend else name


def quality_row(result: dict[str, Any]) -> str:
    summary = result["summary"]
    categories = summary["by_category"]
    cells = [_share(categories[c]["accuracy"]) if c in categories else "–" for c in CATEGORIES]
    calls = summary["tool_calls"]
    latency = summary["end_of_speech_to_first_audio_ms"]["p50"]
    return (f"| {model_name(result)} | **{_share(summary['accuracy'])}** | " + " | ".join(cells)
            + f" | {_share(calls['precision'])} / {_share(calls['recall'])} | "
            + ("–" if latency is None else f"{latency:.0f}") + " |")


def quality_section(results: dict[str, dict[str, Any]]) -> list[str]:
    """The quality table of every ``quality*`` result, with what its rows mean."""
    rows = [quality_row(result) for name, result in results.items() if name.startswith("quality")]
    if not rows:
        return []
    first = next(r for n, r in results.items() if n.startswith("quality"))
    return [f"Answer quality (`bench quality`): {first['summary']['requests']} spoken requests scored automatically;"
            " tool calls P / R: precision and recall of the calls made.", "", HEADER, RULE, *rows, ""]
