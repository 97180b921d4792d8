"""Does a shorter Whisper encoder window transcribe as well as the stock 30 s one, and how much sooner?

Run: ``python -m speech_to_speech.bench.stt_window [--out docs/benchmarks/stt_window.json]``.
``--moonshine`` adds the Moonshine backend as a candidate (the moonshine
extra), ``--candidates`` keeps only the candidates named (``full`` always
runs: it is what the others are compared with), ``--human DIR`` transcribes
pocketsphinx's recorded human speech instead (:mod:`speech_to_speech.bench.human_speech`),
``--repeat N`` runs every condition N times (steadier timings on a busy machine).

Speech: the five benchmark questions, the 38 requests of the ``bench turns``
corpus (hibari, pauses and fillers included) and a few 14-25 s turns made by
joining consecutive corpus requests with 0.4 s pauses. Each is transcribed
as the server would hand it to the STT after a VAD turn (300 ms of silence
before and after) and as a speculative pass hands it (300 ms before, 64 ms
after), and trimmed to its voiced span (a client that commits speech cut
tight): the short window was most fragile with little silence around speech.
The full window's own changes between these conditions are the noise floor
of "differs".

Candidates, each on every clip, in a rotating order so the CPU's noise falls
on all alike: the stock path (``full``, faster-whisper's 30 s window, as the
server calls it), and :class:`WindowedWhisper` with several windows and
tails, with the guard (``suspicious`` -> the stock path) or without (``raw``).
Per candidate: word error rate against the words said (case, punctuation
and number words normalised), how many transcripts differ from ``full``'s,
how many have more errors than ``full``'s, how many fell back, and time per
transcription (median, p95, and the median of its ratio to ``full`` on the
same clip).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio, corpus
from speech_to_speech.bench.human_speech import human_clips
from speech_to_speech.config import LoadContext, ServerSettings
from speech_to_speech.stt.faster_whisper import _transcribe, load_faster_whisper, transcribe_windowed
from speech_to_speech.stt.whisper_window import SAMPLE_RATE, WindowedWhisper, suspicious

# Silence (s) before and after the speech: a VAD turn, a speculative pass, a turn cut tight (a client's commit).
CONDITIONS = {"vad_turn": (0.3, 0.3), "speculative": (0.3, 0.064), "trimmed": (0.0, 0.0)}
JOIN_PAUSE_S = 0.4
LONG_MAX_S = 25.0
LONG_MIN_S = 14.0
NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                "sixteen seventeen eighteen nineteen twenty")
NUMBERS = {w: str(i) for i, w in enumerate(NUMBER_WORDS.split())} | {"thirty": "30", "forty": "40", "fifty": "50"}

Clip = tuple[str, str, np.ndarray]  # name, words said, 16 kHz speech (trimmed to its voiced span)
Candidate = Callable[[np.ndarray], tuple[str, str]]  # samples -> (text, how: "short" | "stock" | "fallback")


def words(text: str) -> list[str]:
    found = re.findall(r"[a-z0-9']+", text.lower().replace("-", " "))
    return [NUMBERS.get(w, w) for w in found]


def word_errors(reference: str, heard: str) -> tuple[int, int]:
    """(edits, reference words): the Levenshtein distance between the two word lists."""
    ref, hyp = words(reference), words(heard)
    row = list(range(len(hyp) + 1))
    for i, said in enumerate(ref, 1):
        diagonal, row[0] = row[0], i
        for j, got in enumerate(hyp, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (said != got))
    return row[len(hyp)], len(ref)


def clips() -> list[Clip]:
    def trimmed(s: audio.Speech) -> Clip:
        return s.name, s.text, resample(s.samples[s.start: s.end], s.rate, SAMPLE_RATE)

    found = [trimmed(s) for s in audio.load_questions()]
    requests = [trimmed(s) for s in corpus.clips(corpus.load_corpus())]
    pause = np.zeros(round(JOIN_PAUSE_S * SAMPLE_RATE), np.float32)
    joined: list[Clip] = []
    group: list[Clip] = []
    for request in [*requests, ("", "", np.zeros(round(LONG_MAX_S * SAMPLE_RATE), np.float32))]:
        length = sum(len(c[2]) + len(pause) for c in group) + len(request[2])
        if length > LONG_MAX_S * SAMPLE_RATE:
            if sum(len(c[2]) for c in group) >= LONG_MIN_S * SAMPLE_RATE:
                samples = np.concatenate([part for c in group for part in (pause, c[2])][1:])
                joined.append((f"long{len(joined)}", " ".join(c[1] for c in group), samples))
            group = []
        group.append(request)
    return found + requests + joined


def candidates(model: Any, moonshine: Any = None) -> dict[str, Candidate]:
    def stock(samples: np.ndarray) -> tuple[str, str]:
        return _transcribe(model, samples, "en", 1)[0], "stock"

    def guarded(window: WindowedWhisper) -> Candidate:
        def run(samples: np.ndarray) -> tuple[str, str]:
            heard = transcribe_windowed(window, samples, 1)
            if heard is not None:
                return heard[0], "short"
            return stock(samples)[0], "fallback" if window.fits(samples) else "stock"
        return run

    def raw(window: WindowedWhisper) -> Candidate:
        def run(samples: np.ndarray) -> tuple[str, str]:
            if not window.fits(samples):
                return stock(samples)[0], "stock"
            decoded = window.decode(samples)
            return decoded.text, "short" if suspicious(decoded) is None else "short (guard would reject)"
        return run

    fitted = {s: WindowedWhisper(model, s) for s in range(2, 31)}

    def fit(samples: np.ndarray) -> tuple[str, str]:
        # The window just long enough: the turn, its 0.5 s tail and 1 s more, in whole seconds.
        seconds = math.ceil(len(samples) / SAMPLE_RATE + 1.5)
        return raw(fitted[seconds])(samples) if seconds < 30 else stock(samples)

    def moonshine_pass(samples: np.ndarray) -> tuple[str, str]:
        from speech_to_speech.stt.moonshine import heard_text

        decoded = moonshine.transcribe(samples)
        return heard_text(decoded), "capped" if decoded.hit_limit else "moonshine"

    return {
        **({"moonshine": moonshine_pass} if moonshine is not None else {}),
        "full": stock,
        "w10_tail0_raw": raw(WindowedWhisper(model, 10.0, tail_s=0.0)),
        "w10_raw": raw(WindowedWhisper(model, 10.0)),
        "fit_raw": fit,
        "w5": guarded(WindowedWhisper(model, 5.0)),
        "w10": guarded(WindowedWhisper(model, 10.0)),
        "w15": guarded(WindowedWhisper(model, 15.0)),
    }


def run(limit: int | None = None, only: list[str] | None = None, human: Path | None = None,
        moonshine: bool = False, repeat: int = 1) -> dict[str, Any]:
    model = load_faster_whisper(ServerSettings.model_validate({}).stt, LoadContext())
    chosen = candidates(model, _load_moonshine() if moonshine else None)
    if only:
        chosen = {name: run_one for name, run_one in chosen.items() if name in only or name == "full"}
    speech = (human_clips(human) if human is not None else clips())[:limit]
    for run_one in chosen.values():  # first-call allocations of every window, outside the timing
        run_one(speech[0][2])
    samples = []
    for turn, (condition, (before, after)) in [(r * len(CONDITIONS) + i, c) for r in range(repeat)
                                               for i, c in enumerate(CONDITIONS.items())]:
        for index, (name, text, voiced) in enumerate(speech):
            said = np.concatenate([np.zeros(round(before * SAMPLE_RATE), np.float32), voiced,
                                   np.zeros(round(after * SAMPLE_RATE), np.float32)])
            order = list(chosen)
            shift = (index + turn) % len(order)
            for candidate in order[shift:] + order[:shift]:
                start = time.perf_counter()
                heard, how = chosen[candidate](said)
                samples.append({"condition": condition, "clip": name, "seconds": round(len(said) / SAMPLE_RATE, 2),
                                "reference": text, "candidate": candidate, "text": heard.strip(), "path": how,
                                "ms": round((time.perf_counter() - start) * 1000.0, 1)})
    return {"summary": summarize(samples, list(chosen)), "samples": samples, "environment": environment(),
            "config": {"model": "packaged Whisper tiny.en int8", "beam_size": 1, "conditions": CONDITIONS,
                       "clips": len(speech), "join_pause_s": JOIN_PAUSE_S, "long_max_s": LONG_MAX_S,
                       "speech": "pocketsphinx test data (human)" if human is not None else "synthetic",
                       "repeat": repeat,
                       "candidates": list(chosen)}}


def _load_moonshine() -> Any:
    from speech_to_speech.stt.moonshine import load_moonshine

    return load_moonshine(ServerSettings.model_validate({"stt": "moonshine"}).stt, LoadContext())


def environment() -> dict[str, Any]:
    """What the timings depend on; other work on the machine skews them (the load average)."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return {"cores": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()],
            "git": commit.stdout.strip() or None,
            "packages": {name: _version(name)
                         for name in ("faster-whisper", "ctranslate2", "onnxruntime", "moonshine-cpp")}}


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def summarize(samples: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    baseline = {s["clip"]: s["text"] for s in samples
                if s["candidate"] == "full" and s["condition"] == next(iter(CONDITIONS))}
    for condition in CONDITIONS:
        rows = [s for s in samples if s["condition"] == condition]
        full = {s["clip"]: s for s in rows if s["candidate"] == "full"}
        summary[condition] = {"full_differs_from_" + next(iter(CONDITIONS)): [
            clip for clip, s in full.items() if words(s["text"]) != words(baseline[clip])]}
        for name in names:
            mine = [s for s in rows if s["candidate"] == name]
            errors = [word_errors(s["reference"], s["text"]) for s in mine]
            full_errors = {s["clip"]: word_errors(s["reference"], s["text"])[0] for s in full.values()}
            ms = np.array([s["ms"] for s in mine])
            ratios = [s["ms"] / full[s["clip"]]["ms"] for s in mine]
            summary[condition][name] = {
                "clips": len(mine),
                "wer_percent": round(100.0 * sum(e for e, _ in errors) / max(1, sum(n for _, n in errors)), 2),
                "differs_from_full": list(dict.fromkeys(
                    s["clip"] for s in mine if words(s["text"]) != words(full[s["clip"]]["text"]))),
                "worse_than_full": list(dict.fromkeys(s["clip"] for s, (e, _) in zip(mine, errors, strict=True)
                                                      if e > full_errors[s["clip"]])),
                "paths": {how: sum(1 for s in mine if s["path"] == how) for how in sorted({s["path"] for s in mine})},
                "ms_median": round(float(np.median(ms)), 1),
                "ms_p95": round(float(np.percentile(ms, 95)), 1),
                "ratio_to_full_median": round(float(np.median(ratios)), 3),
            }
    return summary


def table(summary: dict[str, Any]) -> str:
    lines = ["| condition | candidate | WER % | differ | worse | fell back | median ms | p95 ms | x full |",
             "|---|---|---|---|---|---|---|---|---|"]
    for condition, rows in summary.items():
        for name, r in rows.items():
            if not isinstance(r, dict):
                continue
            lines.append(f"| {condition} | {name} | {r['wer_percent']} | {len(r['differs_from_full'])} | "
                         f"{len(r['worse_than_full'])} | {r['paths'].get('fallback', 0)} | {r['ms_median']} | "
                         f"{r['ms_p95']} | {r['ratio_to_full_median']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks/stt_window.json"))
    parser.add_argument("--limit", type=int, default=None, help="The first N clips only.")
    parser.add_argument("--moonshine", action="store_true", help="Moonshine base-en as a candidate too.")
    parser.add_argument("--candidates", nargs="+", default=None, help="Only these candidates (and full).")
    parser.add_argument("--human", type=Path, default=None, metavar="DIR",
                        help="pocketsphinx's test/data folder: its recorded human speech instead of ours.")
    parser.add_argument("--repeat", type=int, default=1, help="Every condition this many times (timings).")
    args = parser.parse_args()
    results = run(args.limit, args.candidates, args.human, args.moonshine, args.repeat)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results["summary"]))
    for condition, rows in results["summary"].items():
        for name, r in rows.items():
            if not isinstance(r, dict):
                print(condition, name, ", ".join(r) or "none")
            elif r["worse_than_full"]:
                print(condition, name, "worse on:", ", ".join(r["worse_than_full"]))


if __name__ == "__main__":
    main()
