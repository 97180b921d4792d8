"""Listener words and interruptions judged offline, as the server judges them, without a server.

    python scripts/listener_words_offline.py                      # the sets of docs/benchmarks/room
    python scripts/listener_words_offline.py --words 'Yep.|Oh, nice.' --interruptions 'Wait.|Stop.'

Each text is spoken as ``bench room`` speaks it (hibari, and hibari three semitones up). The packaged
Whisper tiny.en hears the speech so far 250 ms into the voice and every 160 ms after, with its readings, as
the server's probe passes do, and then the whole utterance; the rules of
:mod:`speech_to_speech.turns.listener_words` judge each pass. It prints each miss and, per set, how many
remarks were acknowledged and how many interruptions were a barge-in, with the voice heard before a
barge-in was decided. Quicker than ``bench room`` for trying a rule, but it leaves out the server's timing,
the VAD and the room: the live bench gives the figures that count.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio, room_audio
from speech_to_speech.config import LoadContext, ServerSettings
from speech_to_speech.stt.faster_whisper import READINGS, load_faster_whisper, short_window
from speech_to_speech.stt.whisper_window import WindowedWhisper
from speech_to_speech.turns import listener_words as rules

FIRST_PASS_MS, STEP_MS = 250, 160
PRE_ROLL = 3200  # samples of the speech's start the VAD keeps before it reports speech
TAIL = 4800  # samples of silence the utterance's end pass hears after the voice
CAP_MS = 1200  # overlap_barge_in_ms's default: voiced this long, it is a barge-in whatever its words
ROOM = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "room"
SETS = ("held_out", "fresh_held_out_3", "fresh_held_out_cues", "fresh_held_out_4", "blind_set7")


def judged(window: WindowedWhisper, clip: audio.Speech) -> tuple[str | None, int, str]:
    """(the action, the voice in ms when it was decided, the last words heard) for one utterance."""
    x = resample(np.asarray(clip.samples, np.float32), clip.rate, PIPELINE_RATE)
    start, end = clip.start * PIPELINE_RATE // clip.rate, clip.end * PIPELINE_RATE // clip.rate
    remark: tuple[str, ...] | None = None
    for ms in range(FIRST_PASS_MS, CAP_MS, STEP_MS):
        if start + ms * 16 >= end:
            break
        heard = window.decode(x[max(0, start - PRE_ROLL): start + ms * 16], 1, None, "en", READINGS)
        kind = rules.heard_as(heard.text, heard.avg_logprob, heard.readings)
        if kind is rules.Heard.LISTENER:
            remark = rules.words_of(heard.text)
        verdict = rules.judge(kind, ms, final=False, cap_ms=CAP_MS)
        if verdict is not None:
            return verdict.action, ms, heard.text
    heard = window.decode(x[max(0, start - PRE_ROLL): end + TAIL], 1, None, "en", READINGS)
    kind = rules.reread(remark, heard.text, rules.heard_as(heard.text, heard.avg_logprob, heard.readings))
    voiced = (end - start) // 16
    verdict = rules.judge(kind, voiced, final=True, cap_ms=CAP_MS)
    return (verdict.action if verdict else None), voiced, heard.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", help="listener words, '|'-separated (instead of the recorded sets)")
    parser.add_argument("--interruptions", default="", help="interruptions, '|'-separated")
    args = parser.parse_args()
    if args.words:
        sets = {"given": (tuple(args.words.split("|")), tuple(t for t in args.interruptions.split("|") if t))}
    else:
        sets = {"bench": (room_audio.LISTENER_WORDS, room_audio.INTERRUPTIONS)}
        for name in SETS:
            config = json.loads((ROOM / f"{name}.json").read_text())["config"]
            sets[name] = (tuple(config["listener_words"]), tuple(config["interruptions"]))
    settings = ServerSettings.model_validate({}).stt
    window = short_window(load_faster_whisper(settings, LoadContext()), settings)
    if window is None:
        raise SystemExit("the STT settings use no short window: nothing here to judge with")
    for name, (words, interruptions) in sets.items():
        clips = {clip.name: clip for clip in room_audio.spoken(words + interruptions)}
        for part, texts, wanted in (("remarks", words, "acknowledge"), ("interruptions", interruptions, "barge_in")):
            right, decided = 0, []
            for text in texts:
                for voice in ("hibari", "hibari+3"):
                    action, at_ms, said = judged(window, clips[f"{voice}: {text}"])
                    right += action == wanted
                    decided += [at_ms] if action == "barge_in" else []
                    if action != wanted:
                        print(f"  miss  {name} {voice}: {text!r} heard as {said!r} -> {action}")
            when = f", barge-in decided at p50 {np.median(decided):.0f} ms of voice" if decided else ""
            print(f"{name} {part}: {right} of {2 * len(texts)} right{when}")


if __name__ == "__main__":
    main()
