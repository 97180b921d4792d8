"""``bench report``: the README's table and a PNG plot, generated from the benchmarks' JSON files.

The table goes between ``<!-- bench:start -->`` and ``<!-- bench:end -->`` in
the README, with the machine and the command that produced each figure, so
the README never shows a number no file backs.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from speech_to_speech.bench.conversation_report import conversation_counts, conversation_figures
from speech_to_speech.bench.echo_report import echo_counts, echo_figures
from speech_to_speech.bench.languages_report import languages_rows
from speech_to_speech.bench.load_report import load_counts, load_figures
from speech_to_speech.bench.quality_report import HEADER as QUALITY_HEADER
from speech_to_speech.bench.quality_report import quality_row, quality_section
from speech_to_speech.bench.resume_report import LABELS as RESUME_LABELS
from speech_to_speech.bench.resume_report import failover_rows, resume_rows

START, END = "<!-- bench:start -->", "<!-- bench:end -->"
ORDER = ("latency", "turns", "load", "conversation", "quality", "bargein", "echo", "languages", "overhead", "resume",
         "failover", "capacity", "startup")
TABLED = ("capacity", "startup")  # their own tables, not figure rows (and every quality* result)
PLOT_NAME = "benchmarks.png"
# Labels of the figures a reader looks for; others show under their key.
LABELS = {
    "end_of_speech_to_first_audio_ms": "end of speech → first audio delta",
    "vad_ms": "· end of speech → VAD end of turn",
    "stt_ms": "· → STT done",
    "llm_first_token_ms": "· → LLM first token",
    "tts_first_audio_ms": "· → TTS first audio",
    "send_ms": "· → first audio sent",
    "wire_ms": "· → first audio delta read",
    "end_of_speech_to_first_sound_ms": "end of speech → first sound (the audio past its leading silence)",
    "speech_to_cancelled_ms": "start of speech → response cancelled",
    "beyond_detection_window_ms": "· after min_speech_ms of speech was sent",
    "speech_to_speech_started_ms": "start of speech → speech_started",
    "speech_started_to_cancelled_ms": "speech_started → response cancelled",
    "stale_audio_ms": "old audio after the cancellation (ms of audio)",
    "taken_back_heard_ms": "of a reply taken back, audio read before it stopped (ms of audio)",
    "append_to_speech_started_ms": "append → speech_started",
    "vad_to_speech_stopped_ms": "VAD end of turn → speech_stopped",
    "stt_to_transcript_ms": "STT done → transcription.completed",
    "llm_to_text_delta_ms": "LLM first token → transcript delta",
    "tts_to_audio_delta_ms": "TTS first audio → audio delta",
    "send_to_wire_ms": "audio sent → audio delta read",
    **RESUME_LABELS,
}


def load_results(folder: Path) -> dict[str, dict[str, Any]]:
    """The benchmark files in ``folder``, by benchmark, in the report's order."""
    found = {}
    for name in ORDER:
        path = folder / f"{name}.json"
        if path.exists():
            found[name] = json.loads(path.read_text())
    for path in sorted(folder.glob("quality-*.json")):  # bench quality of other models: one row each
        found[path.stem] = json.loads(path.read_text())
    return found


def _ms(value: Any) -> str:
    if value is None:
        return "–"
    text = f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}"
    return "0.0" if text == "-0.0" else text  # a rounded -0.01 ms is no time, not a negative one


def _is_stats(value: Any) -> bool:
    return isinstance(value, dict) and "p50" in value and "p95" in value


def figure_rows(name: str, summary: dict[str, Any]) -> list[str]:
    """Markdown rows ``| benchmark | figure | p50 | p95 | n |`` of a non-capacity summary (named once)."""
    rows = [f"| {LABELS.get(key, key)} | {_ms(stats['p50'])} | {_ms(stats['p95'])} | {stats['n']} |"
            for key, stats in summary.items() if _is_stats(stats)]
    return [f"| {f'**{name}**' if index == 0 else ''} {row}" for index, row in enumerate(rows)]


def turns_rows(summary: dict[str, Any]) -> list[str]:
    """The rows under the turns latency: requests answered, double answers, responses that ended otherwise,
    and how the turn detector ended the turns."""
    rows = [f"| | requests answered | {summary['answered']} of {summary['requests']} | | |",
            f"| | double answers (two responses with audio) | {summary['double_answers']} | | |"]
    if "taken_back" in summary:
        rows.append(f"| | replies taken back (the user went on with the request) | {summary['taken_back']} | | |")
    if "split_requests" in summary:
        rows.append(f"| | requests heard as more than one turn | {summary['split_requests']} | | |")
    ended = summary.get("not_completed") or {}
    if ended:
        rows.append("| | responses not completed | " + ", ".join(f"{k} ×{v}" for k, v in ended.items()) + " | | |")
    outcomes = summary.get("turn_outcomes") or {}
    if outcomes:
        rows.append("| | turn ends by detector outcome | " + ", ".join(f"{k} ×{v}" for k, v in outcomes.items())
                    + " | | |")
    return rows


def load_rows(summary: dict[str, Any]) -> list[str]:
    """Each phase's latency with its ratio to alone, then requests answered per phase."""
    return figure_rows("load", load_figures(summary)) + load_counts(summary)


def echo_rows(summary: dict[str, Any]) -> list[str]:
    """A real barge-in over the echo and without it, then what the echo did with cancellation off and on."""
    return figure_rows("echo", echo_figures(summary)) + echo_counts(summary)


def bargein_rows(summary: dict[str, Any]) -> list[str]:
    """The barge-in latency, then the trials the answer outran."""
    missed = f"| | trials missed (the answer ended first) | {summary['missed']} of {summary['trials']} | | |"
    return [*figure_rows("bargein", summary), missed]


# A spoken benchmark's rows in the figures table; one not named here has only its latency rows.
SPOKEN_ROWS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "turns": lambda summary: figure_rows("turns", summary) + turns_rows(summary),
    "load": load_rows,
    "conversation": lambda summary: (figure_rows("conversation", conversation_figures(summary))
                                     + conversation_counts(summary)),
    "echo": echo_rows,
    "bargein": bargein_rows,
    "languages": languages_rows,
    "resume": lambda summary: figure_rows("resume", summary) + resume_rows(summary),
    "failover": lambda summary: figure_rows("failover", summary) + failover_rows(summary),
}


def spoken_rows(name: str, summary: dict[str, Any]) -> list[str]:
    """The figures-table rows of one spoken benchmark, for the README and the terminal alike."""
    build = SPOKEN_ROWS.get(name)
    return build(summary) if build else figure_rows(name, summary)


def capacity_rows(summary: dict[str, Any]) -> list[str]:
    rows = []
    for level, stats in sorted(summary["sessions"].items(), key=lambda item: int(item[0])):
        latency, added = stats["end_of_speech_to_first_audio_ms"], stats["added_latency_ms"]
        underrun = stats["underrun_ms"]
        rows.append(f"| {level} | {_ms(latency['p50'])} | {_ms(latency['p95'])} | {_ms(added['p50'])} | "
                    f"{_ms(added['p95'])} | {_ms(underrun['p95'])} | {stats['errors']} |")
    return rows


STARTUP_HEADER = ("| units | ready p50 (ms) | ready p95 (ms) | RSS at ready p50 (MB) | idle RSS p50 (MB) "
                  "| idle RSS p95 (MB) | errors |")


def startup_rows(summary: dict[str, Any]) -> list[str]:
    rows = []
    for units, stats in sorted(summary["units"].items(), key=lambda item: int(item[0])):
        ready, idle = stats["ready_ms"], stats["rss_idle_mb"]
        rows.append(f"| {units} | {_ms(ready['p50'])} | {_ms(ready['p95'])} | {_ms(stats['rss_ready_mb']['p50'])} | "
                    f"{_ms(idle['p50'])} | {_ms(idle['p95'])} | {stats['errors']} |")
    return rows


def startup_line(summary: dict[str, Any]) -> str:
    extra, shared_once = summary.get("extra_unit_mb"), summary.get("extra_unit_pss_mb")
    cost = f"each extra pipeline unit adds **{_ms(extra)} MB**" if extra is not None else "one unit count only"
    if extra is not None and shared_once is not None:
        cost += f" (**{_ms(shared_once)} MB** of PSS, which counts pages its mappings share once)"
    return (f"Startup of `serve` (spawn → `GET /health` 200) and its process tree's RSS, idle after one answered"
            f" turn per unit: {cost}.")


def machine_line(results: dict[str, dict[str, Any]]) -> str:
    env = next(iter(results.values()))["environment"]
    packages = env.get("packages") or {}
    versions = ", ".join(f"{name} {packages[name]}" for name in ("torch", "onnxruntime", "ctranslate2",
                                                                 "transformers") if packages.get(name))
    line = (f"Machine: {env['cpu']}, {env['cores']} cores, {env['ram_gib']} GiB RAM; Python {env['python']}"
            f" ({versions}); commit `{env.get('git')}`.")
    by_cpu: dict[str, list[str]] = {}
    for name, result in results.items():
        by_cpu.setdefault(str(result["environment"].get("cpu")), []).append(name)
    if len(by_cpu) > 1:  # rounds measured on different machines: say which figure came from which
        line += " Measured on " + "; ".join(f"{cpu}: {', '.join(names)}" for cpu, names in by_cpu.items()) + "."
    return line


def markdown(results: dict[str, dict[str, Any]], image: str | None = None) -> str:
    """The generated README section: machine, figures, capacity, plot and commands."""
    if not results:
        return "No benchmark results yet: run `speech-to-speech bench …` first.\n"
    lines = [machine_line(results), ""]
    spoken = [name for name in results if name not in TABLED and not name.startswith("quality")]
    if spoken:
        lines += ["| benchmark | figure | p50 (ms) | p95 (ms) | n |", "|---|---|---:|---:|---:|"]
        for name in spoken:
            lines += spoken_rows(name, results[name]["summary"])
        lines += ["", "Models: " + "; ".join(f"{name}: {_backends(results[name]['environment']['server']['models'])}"
                                             for name in results) + ".", ""]
    lines += quality_section(results)
    if "capacity" in results:
        summary = results["capacity"]["summary"]
        lines += [f"Capacity: **{summary['max_sessions_within_budget']}**"
                  f" concurrent sessions keep the p95 added latency under {summary['budget_ms']:.0f} ms"
                  f" (baseline: median {_ms(summary['baseline_ms'])} ms at the smallest N).", "",
                  "| sessions | latency p50 | latency p95 | added p50 | added p95 | underrun p95 (ms) | errors |",
                  "|---:|---:|---:|---:|---:|---:|---:|", *capacity_rows(summary), ""]
    if "startup" in results:
        summary = results["startup"]["summary"]
        lines += [startup_line(summary), "", STARTUP_HEADER, "|---:|---:|---:|---:|---:|---:|---:|",
                  *startup_rows(summary), ""]
    if image:
        lines += [f"![benchmark plot]({image})", ""]
    lines += ["Produced by:", "", "```sh", *(results[name]["command"] for name in results),
              "speech-to-speech bench report", "```"]
    return "\n".join(lines) + "\n"


def _backends(models: dict[str, str]) -> str:
    names = [str(models.get(kind, "?")).split(" (")[0] for kind in ("vad", "stt", "llm", "tts")]
    return names[0] if len(set(names)) == 1 else ", ".join(names)  # "scripted", not four times


def replace_section(text: str, section: str) -> str:
    """``text`` with everything between the bench markers replaced by ``section``."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no {START} … {END} markers")
    return f"{text[: start + len(START)]}\n{section}{text[end:]}"


def _samples(result: dict[str, Any] | None, key: str) -> list[float]:
    if result is None:
        return []
    return [s[key] for s in result["samples"] if isinstance(s.get(key), int | float)]


def _boxes(axis: Any, result: dict[str, Any] | None, keys: Iterable[str], title: str) -> None:
    present = [(LABELS.get(k, k).lstrip("· "), _samples(result, k)) for k in keys]
    present = [(label, values) for label, values in present if values]
    axis.set_title(title, fontsize=10)
    if not present:
        axis.text(0.5, 0.5, "no data", ha="center", va="center", transform=axis.transAxes)
        return
    axis.boxplot([values for _, values in present], orientation="horizontal", whis=(5, 95))
    axis.set_yticks(range(1, len(present) + 1), [label for label, _ in present], fontsize=8)
    axis.set_xlabel("ms (whiskers: p5–p95)")
    axis.invert_yaxis()


def _capacity(axis: Any, result: dict[str, Any] | None) -> None:
    axis.set_title("Capacity: added latency vs concurrent sessions", fontsize=10)
    if result is None:
        axis.text(0.5, 0.5, "no data", ha="center", va="center", transform=axis.transAxes)
        return
    summary = result["summary"]
    levels = sorted(summary["sessions"], key=int)
    xs = [int(level) for level in levels]
    for quantile, style in (("p50", "o-"), ("p95", "s--")):
        ys = [summary["sessions"][level]["added_latency_ms"][quantile] for level in levels]
        axis.plot(xs, ys, style, label=f"added latency {quantile}")
    underrun = [summary["sessions"][level]["underrun_ms"]["p95"] for level in levels]
    axis.plot(xs, underrun, "^:", label="underrun p95 (ms)")
    axis.axhline(summary["budget_ms"], color="grey", linewidth=1, label=f"budget {summary['budget_ms']:.0f} ms")
    axis.set_xscale("log", base=2)
    axis.set_xticks(xs, [str(x) for x in xs])
    axis.set_xlabel("concurrent sessions")
    axis.set_ylabel("ms")
    axis.legend(fontsize=8)


def plot(results: dict[str, dict[str, Any]], path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("bench report draws with matplotlib: pip install 'speech-to-speech[bench]'") from None
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    from speech_to_speech.bench import bargein, latency, overhead

    figure, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    _boxes(axes[0][0], results.get("latency"), latency.FIGURES, "Voice-to-voice latency and its stages")
    _boxes(axes[0][1], results.get("bargein"), bargein.FIGURES, "Barge-in")
    _boxes(axes[1][0], results.get("overhead"), overhead.FIGURES, "Server overhead per hop (scripted, zero model time)")
    _capacity(axes[1][1], results.get("capacity"))
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def run_report(folder: Path, plot_path: Path | None, readme: Path | None) -> int:
    results = load_results(folder)
    if not results:
        print(f"no benchmark results in {folder}", file=sys.stderr)
        return 1
    plot_path = plot_path or folder / PLOT_NAME
    try:
        plot(results, plot_path)
    except RuntimeError as error:
        print(f"bench report: {error}", file=sys.stderr)
        return 1
    link = Path(os.path.relpath(plot_path, readme.parent if readme else Path.cwd())).as_posix()
    section = markdown(results, link)
    if readme is None:
        print(section, end="")
        return 0
    try:
        readme.write_text(replace_section(readme.read_text(), section))
    except (OSError, ValueError) as error:
        print(f"bench report: {readme}: {error}", file=sys.stderr)
        return 1
    print(f"wrote {plot_path} and the table in {readme}")
    return 0


def print_summary(result: dict[str, Any]) -> None:
    """A benchmark's figures on the terminal, as the README's rows."""
    if result["benchmark"] == "startup":
        print(STARTUP_HEADER)
        print("\n".join(startup_rows(result["summary"])))
        print(startup_line(result["summary"]).replace("**", ""))
        return
    if result["benchmark"] == "quality":
        print(QUALITY_HEADER)
        print(quality_row(result))
        return
    if result["benchmark"] == "soak":
        print(json.dumps(result["summary"], indent=2))
        return
    if result["benchmark"] == "capacity":
        summary = result["summary"]
        print("| sessions | latency p50 | latency p95 | added p50 | added p95 | underrun p95 | errors |")
        print("\n".join(capacity_rows(summary)))
        print(f"max sessions within {summary['budget_ms']:.0f} ms p95 added latency: "
              f"{summary['max_sessions_within_budget']}")
        return
    print("| benchmark | figure | p50 (ms) | p95 (ms) | n |")
    print("\n".join(spoken_rows(result["benchmark"], result["summary"])))
