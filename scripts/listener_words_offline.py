"""Listener words and interruptions judged offline, as the server judges them, without a server.

    python scripts/listener_words_offline.py                      # the sets of docs/benchmarks/room
    python scripts/listener_words_offline.py --words 'Yep.|Oh, nice.' --interruptions 'Wait.|Stop.'
    python scripts/listener_words_offline.py --probe-stt moonshine  # Moonshine base-en hears the passes

Each text is spoken as ``bench room`` speaks it (hibari, and hibari three semitones up). The packaged Whisper
tiny.en hears the speech so far 250 ms into the voice, 80 ms later and every 160 ms after (``next_probe_ms``),
with its readings (and, where its words alone would take the turn, how nearly as likely it found a hum), as
the server's probe passes do, and then the whole utterance (with the packaged Whisper base's second reading
where tiny.en's words leave it undecided, as the server's language check model gives it); the rules of
:mod:`speech_to_speech.turns.listener_words` judge each pass. ``--probe-stt moonshine`` has Moonshine base-en
(the ``moonshine`` extra, as ``--stt moonshine`` runs it) hear every pass instead: it gives words only, no
log-probability and no other readings, so the rules' paths for words the STT was unsure of stay shut. It
prints each miss and, per set, how many remarks were acknowledged and how many interruptions were a barge-in,
with the voice heard before a barge-in was decided and the CPU time of a probe pass. Quicker than ``bench
room`` for trying a rule, but it leaves out the server's timing, the VAD and the room: the live bench gives
the figures that count.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio, room_audio
from speech_to_speech.bench.results import machine
from speech_to_speech.config import LoadContext, ServerSettings
from speech_to_speech.pipeline.messages.transcription import Readings
from speech_to_speech.realtime.conversation.overlap_judge import next_probe_ms
from speech_to_speech.stt.faster_whisper import (
    READINGS,
    language_check_of,
    load_faster_whisper,
    read_again,
    short_window,
)
from speech_to_speech.turns import listener_words as rules

FIRST_PASS_MS = 250  # the voice the VAD has heard when it reports speech, and the first probe goes
PRE_ROLL = 3200  # samples of the speech's start the VAD keeps before it reports speech
TAIL = 4800  # samples of silence the utterance's end pass hears after the voice
CAP_MS = 1200  # overlap_barge_in_ms's default: voiced this long, it is a barge-in whatever its words
ROOM = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "room"
SETS = ("held_out", "fresh_held_out_3", "fresh_held_out_cues", "fresh_held_out_4", "blind_set7", "blind_set8")


class Reading(NamedTuple):
    """What one pass heard, as the rules take it."""

    text: str
    avg_logprob: float | None
    readings: Readings
    hum_gap: float | None = None  # how much less likely the STT found a hum than these words


Reader = Callable[[np.ndarray, bool], Reading]  # 16 kHz speech, whether it is the utterance's end -> what it says
SecondReader = Callable[[np.ndarray], "tuple[str, float] | None"]  # the larger model's words, if any


def second_reader() -> SecondReader:
    """The language check's model (the packaged Whisper base) in its short window, as the server reads the end
    of speech over the answer that tiny.en leaves undecided; no second reading where it is not installed."""
    settings = ServerSettings.model_validate({}).stt
    checker = language_check_of(load_faster_whisper(settings, LoadContext()))
    window = None if checker is None else short_window(checker, settings)
    if window is None:
        print("no second reading: the language check's model (whisper-base) is not installed")

    return lambda samples: None if window is None else read_again(window, samples, settings.beam_size)


def whisper_reader() -> Reader:
    """The packaged Whisper tiny.en in the server's short window, with its readings."""
    settings = ServerSettings.model_validate({}).stt
    window = short_window(load_faster_whisper(settings, LoadContext()), settings)
    if window is None:
        raise SystemExit("the STT settings use no short window: nothing here to judge with")

    def read(samples: np.ndarray, final: bool) -> Reading:
        def hum_check(text: str, avg_logprob: float, readings: Readings) -> bool:
            return rules.takes_turn(text, avg_logprob, readings, final=final)

        heard = window.decode(samples, 1, None, "en", READINGS, hum_check)
        return Reading(heard.text, heard.avg_logprob, heard.readings, heard.hum_gap)
    return read


def moonshine_reader() -> Reader:
    """Moonshine base-en as ``--stt moonshine`` runs it: its words only."""
    from speech_to_speech.stt.moonshine import heard_text, load_moonshine

    settings = ServerSettings.model_validate({"stt": "moonshine"}).stt
    model = load_moonshine(settings, LoadContext())
    return lambda samples, final: Reading(heard_text(model.transcribe(samples)).strip(), None, ())


READERS = {"faster-whisper": whisper_reader, "moonshine": moonshine_reader}


class Judged(NamedTuple):
    action: str | None  # "barge_in", "acknowledge", or None: undecided
    at_ms: int  # the voice heard when it was decided
    said: str  # the last words heard
    probe_cpu_ms: tuple[float, ...]  # the CPU time of each probe pass (not the utterance's own pass)


def judged(read: Reader, clip: audio.Speech, second: SecondReader = lambda samples: None) -> Judged:
    """How the server would judge one utterance spoken over its answer, its passes heard by ``read``."""
    x = resample(np.asarray(clip.samples, np.float32), clip.rate, PIPELINE_RATE)
    start, end = clip.start * PIPELINE_RATE // clip.rate, clip.end * PIPELINE_RATE // clip.rate
    remark: tuple[str, ...] | None = None
    costs: list[float] = []
    ms = FIRST_PASS_MS
    while ms < CAP_MS and start + ms * 16 < end:
        began = time.process_time()
        heard = read(x[max(0, start - PRE_ROLL): start + ms * 16], False)
        costs.append((time.process_time() - began) * 1000)
        kind = rules.heard_so_far(*heard)
        if kind is rules.Heard.LISTENER:
            remark = rules.words_of(heard.text)
        verdict = rules.judge(kind, ms, final=False, cap_ms=CAP_MS)
        if verdict is not None:
            return Judged(verdict.action, ms, heard.text, tuple(costs))
        ms += next_probe_ms(len(costs))
    whole = x[max(0, start - PRE_ROLL): end + TAIL]
    heard = read(whole, True)
    again = second(whole) if rules.undecided(*heard) else None
    kind = rules.reread(remark, heard.text, rules.heard_as(*heard), again)
    voiced = (end - start) // 16
    verdict = rules.judge(kind, voiced, final=True, cap_ms=CAP_MS)
    return Judged(verdict.action if verdict else None, voiced, heard.text, tuple(costs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", help="listener words, '|'-separated (instead of the recorded sets)")
    parser.add_argument("--interruptions", default="", help="interruptions, '|'-separated")
    parser.add_argument("--probe-stt", choices=sorted(READERS), default="faster-whisper",
                        help="the STT that hears the probe passes and the utterance's own pass")
    parser.add_argument("--json", type=Path, help="also write each set's figures and misses to this file")
    args = parser.parse_args()
    if args.words:
        sets = {"given": (tuple(args.words.split("|")), tuple(t for t in args.interruptions.split("|") if t))}
    else:
        sets = {"bench": (room_audio.LISTENER_WORDS, room_audio.INTERRUPTIONS)}
        for name in SETS:
            config = json.loads((ROOM / f"{name}.json").read_text())["config"]
            sets[name] = (tuple(config["listener_words"]), tuple(config["interruptions"]))
    started = machine()  # the load before the run, beside the figures
    read = READERS[args.probe_stt]()
    second = second_reader()
    read(np.zeros(PIPELINE_RATE // 2, np.float32), True)  # first-run allocations before anything is timed
    costs: list[float] = []
    report: dict[str, dict[str, object]] = {}
    for name, (words, interruptions) in sets.items():
        clips = {clip.name: clip for clip in room_audio.spoken(words + interruptions)}
        for part, texts, wanted in (("remarks", words, "acknowledge"), ("interruptions", interruptions, "barge_in")):
            right, decided, misses = 0, [], []
            for text in texts:
                for voice in ("hibari", "hibari+3"):
                    verdict = judged(read, clips[f"{voice}: {text}"], second)
                    costs += verdict.probe_cpu_ms
                    right += verdict.action == wanted
                    decided += [verdict.at_ms] if verdict.action == "barge_in" else []
                    if verdict.action != wanted:
                        misses.append(f"{voice}: {text!r} heard as {verdict.said!r} -> {verdict.action}")
                        print(f"  miss  {name} {misses[-1]}")
            when = f", barge-in decided at p50 {np.median(decided):.0f} ms of voice" if decided else ""
            print(f"{name} {part}: {right} of {2 * len(texts)} right{when}")
            report[f"{name} {part}"] = {"right": right, "of": 2 * len(texts), "misses": misses,
                                        "barge_in_at_ms_p50": float(np.median(decided)) if decided else None}
    p50, p90 = np.percentile(costs, [50, 90]) if costs else (0.0, 0.0)
    print(f"{args.probe_stt}: {len(costs)} probe passes, CPU time p50 {p50:.0f} ms, p90 {p90:.0f} ms")
    if args.json:
        summary = {"probe_stt": args.probe_stt, "probe_passes": len(costs),
                   "probe_cpu_ms_p50": round(float(p50), 1), "probe_cpu_ms_p90": round(float(p90), 1)}
        command = shlex.join(["python", *sys.argv])
        env = {**started, "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
        result = {"command": command, "summary": summary, "sets": report, "environment": env}
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
