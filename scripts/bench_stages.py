"""Per-stage figures of the configured backends on this machine.

    python scripts/bench_stages.py [--questions-dir DIR] [--out docs/benchmarks/stages.json]

Loads each backend as the server would (ServerSettings defaults, or a YAML
preset with --config), then measures, after one untimed warm-up call each:
VAD time per 32 ms chunk, STT real-time factor on the spoken questions,
LLM time to first token and decode speed on their transcripts, and TTS time
to first audio and real-time factor on the LLM's replies. Writes JSON and
prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech import registry
from speech_to_speech.audio.chunker import Chunker
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.config import ServerSettings, load_yaml, settings_from_yaml
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest, TokenUsage
from speech_to_speech.pipeline.session_config import ConfigHolder

REPO = Path(__file__).resolve().parent.parent
STT_RATE = 16000
CHUNK_S = 0.032


def _handler(kind: registry.Kind, settings: ServerSettings, model: Any) -> Any:
    backend = registry.get(kind, getattr(settings, kind))
    context = HandlerContext(CancelScope(), ConfigHolder())
    return backend.handler(context, None, None, model=model, settings=settings)


def load_all(settings: ServerSettings) -> tuple[dict[str, Any], dict[str, float]]:
    handlers: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for kind in ("vad", "stt", "llm", "tts"):
        backend = registry.get(kind, getattr(settings, kind))
        started = time.perf_counter()
        model = backend.load(settings)
        seconds[kind] = time.perf_counter() - started
        handlers[kind] = _handler(kind, settings, model)
    return handlers, seconds


def expected_words(questions_dir: Path) -> dict[str, str]:
    """The README's `| qN.wav | words |` table, when there is one."""
    readme = questions_dir / "README.md"
    if not readme.exists():
        return {}
    return dict(re.findall(r"^\|\s*(\S+\.wav)\s*\|\s*(.+?)\s*\|\s*$", readme.read_text(), re.MULTILINE))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def word_recall(expected: str, heard: str) -> float:
    want, got = _words(expected), set(_words(heard))
    return sum(w in got for w in want) / len(want) if want else 1.0


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "max": max(values),
    }


# ------------------------------------------------------------------ stages


def bench_vad(vad: Any, clips: list[np.ndarray]) -> dict[str, Any]:
    chunks = [chunk for clip in clips for chunk, _ in Chunker().push(clip)]
    vad.speech_probability(chunks[0])  # warm-up
    timings = []
    for chunk in chunks:
        started = time.perf_counter()
        vad.speech_probability(chunk)
        timings.append((time.perf_counter() - started) * 1000)
    vad.reset_model_state()
    return {"chunks": len(chunks), "ms_per_chunk": _summary(timings), "chunk_ms": CHUNK_S * 1000}


def bench_stt(
    stt: Any, clips: dict[str, np.ndarray], expected: dict[str, str], repeats: int
) -> dict[str, Any]:
    stt.transcribe(next(iter(clips.values())), stt.language())  # warm-up
    rows: list[dict[str, Any]] = []
    for name, audio in clips.items():
        times = []
        for _ in range(repeats):  # short clips: one run is noisy, the median is not
            started = time.perf_counter()
            text, _ = stt.transcribe(audio, stt.language())
            times.append(time.perf_counter() - started)
        elapsed = statistics.median(times)
        row: dict[str, Any] = {
            "file": name,
            "audio_s": len(audio) / STT_RATE,
            "seconds": elapsed,
            "rtf": elapsed / (len(audio) / STT_RATE),
            "text": text.strip(),
        }
        if name in expected:
            row["word_recall"] = word_recall(expected[name], text)
        rows.append(row)
    return {"per_file": rows, "rtf": _summary([r["rtf"] for r in rows])}


def _timed_stream(parts: Iterator[Any]) -> tuple[list[Any], float | None, float]:
    """(parts, seconds to the first part, total seconds) of a stream."""
    started = time.perf_counter()
    first: float | None = None
    collected = []
    for part in parts:
        if first is None:
            first = time.perf_counter() - started
        collected.append(part)
    return collected, first, time.perf_counter() - started


def bench_llm(llm: Any, prompts: list[str]) -> dict[str, Any]:
    def ask(text: str) -> GenerateResponseRequest:
        return GenerateResponseRequest("bench", 0, (ChatMessage("user", text),))

    list(llm.generate(ask("Hello!")))  # warm-up
    rows: list[dict[str, Any]] = []
    for prompt in prompts:
        parts, first, total = _timed_stream(llm.generate(ask(prompt)))
        usage = next((p for p in parts if isinstance(p, TokenUsage)), None)
        output_tokens = usage.output_tokens if usage else 0
        decode_s = total - (first or 0.0)
        rows.append(
            {
                "prompt": prompt,
                "reply": "".join(p for p in parts if isinstance(p, str)),
                "ttft_s": first,
                "output_tokens": output_tokens,
                # The first token's time is the prefill; the rest is decode.
                "tokens_per_s": (output_tokens - 1) / decode_s
                if output_tokens > 1 and decode_s > 0
                else None,
            }
        )
    return {
        "per_prompt": rows,
        "ttft_s": _summary([r["ttft_s"] for r in rows if r["ttft_s"] is not None]),
        "tokens_per_s": _summary([r["tokens_per_s"] for r in rows if r["tokens_per_s"] is not None]),
    }


def bench_tts(tts: Any, texts: list[str]) -> dict[str, Any]:
    list(tts.synthesize("Warming up.", None, None))  # warm-up
    rows: list[dict[str, Any]] = []
    for text in texts:
        parts, first, total = _timed_stream(tts.synthesize(text, None, None))
        # A backend may hand out Phonemized pieces (audio with the phonemes it spoke).
        audio_s = sum(len(getattr(p, "audio", p)) for p in parts) / tts.sample_rate
        rows.append(
            {
                "text": text,
                "first_audio_s": first,
                "seconds": total,
                "audio_s": audio_s,
                "rtf": total / audio_s if audio_s else None,
            }
        )
    return {
        "per_text": rows,
        "first_audio_s": _summary([r["first_audio_s"] for r in rows if r["first_audio_s"] is not None]),
        "rtf": _summary([r["rtf"] for r in rows if r["rtf"] is not None]),
    }


# ------------------------------------------------------------------ output


def table(result: dict[str, Any]) -> str:
    s, load = result["stages"], result["load_s"]
    names = result["backends"]
    lines = [
        f"{'stage':<5} {'backend':<16} {'load s':>7}  figures (mean / median / max)",
        f"{'vad':<5} {names['vad']:<16} {load['vad']:>7.2f}  "
        + "ms per 32 ms chunk {mean:.3f} / {median:.3f} / {max:.3f}".format(**s["vad"]["ms_per_chunk"]),
        f"{'stt':<5} {names['stt']:<16} {load['stt']:>7.2f}  "
        + "RTF {mean:.3f} / {median:.3f} / {max:.3f}".format(**s["stt"]["rtf"]),
        f"{'llm':<5} {names['llm']:<16} {load['llm']:>7.2f}  "
        + "TTFT s {mean:.3f} / {median:.3f} / {max:.3f}".format(**s["llm"]["ttft_s"])
        + ";  tok/s {mean:.1f} / {median:.1f} / {max:.1f}".format(**s["llm"]["tokens_per_s"]),
        f"{'tts':<5} {names['tts']:<16} {load['tts']:>7.2f}  "
        + "first audio s {mean:.3f} / {median:.3f} / {max:.3f}".format(**s["tts"]["first_audio_s"])
        + ";  RTF {mean:.3f} / {median:.3f} / {max:.3f}".format(**s["tts"]["rtf"]),
    ]
    lines.append("")
    for row in s["stt"]["per_file"]:
        recall = f"  words {row['word_recall']:.0%}" if "word_recall" in row else ""
        lines.append(
            f"  {row['file']}: {row['audio_s']:.2f} s, RTF {row['rtf']:.3f}{recall}  {row['text']!r}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions-dir", type=Path, default=REPO.parent / "shared" / "audio" / "questions")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks" / "stages.json")
    parser.add_argument("--config", type=Path, help="YAML preset with server settings (default: built-in)")
    parser.add_argument("--stt-repeats", type=int, default=3, help="Transcriptions per file (median kept)")
    args = parser.parse_args(argv)
    load_at_start = os.getloadavg()[0]

    settings = ServerSettings(**(settings_from_yaml(load_yaml(args.config)) if args.config else {}))
    files = sorted(args.questions_dir.glob("*.wav"))
    if not files:
        parser.error(f"no .wav files in {args.questions_dir}")
    clips = {f.name: read_wav(f, STT_RATE)[0] for f in files}

    handlers, load_s = load_all(settings)
    stt = bench_stt(handlers["stt"], clips, expected_words(args.questions_dir), args.stt_repeats)
    llm = bench_llm(handlers["llm"], [row["text"] for row in stt["per_file"]])
    result = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            # Other processes skew every figure on a small machine: say how busy it was.
            "load_average_1m_at_start": load_at_start,
        },
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "questions_dir": str(args.questions_dir),
        "backends": {kind: getattr(settings, kind) for kind in ("vad", "stt", "llm", "tts")},
        "load_s": load_s,
        "settings": {"stt_repeats": args.stt_repeats, "warm_up": "one untimed call per stage"},
        "stages": {
            "vad": bench_vad(handlers["vad"], list(clips.values())),
            "stt": stt,
            "llm": llm,
            "tts": bench_tts(
                handlers["tts"], [row["reply"] for row in llm["per_prompt"] if row["reply"].strip()]
            ),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
