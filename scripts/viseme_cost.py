"""What the viseme stage costs, and how close its fallbacks come to hibari's own timing.

    python scripts/viseme_cost.py

Speaks a few sentences with hibari (the default TTS; with the onnx package, the visemes
extra, it also gives each phoneme's duration), then over that audio, in 100 ms chunks as
the TTS hands them over:

- cost: ms of CPU per second of speech of each route of the stage (the TTS is not timed);
- agreement: on how many 20 ms frames the estimated timing (phonemes spread over the
  audio) and the acoustic route (shapes heard in the audio) show the viseme that the
  model's own phoneme durations put there.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from hibari import Hibari

from speech_to_speech.audio.rates import TTS_RATE
from speech_to_speech.audio.resample import to_int16
from speech_to_speech.tts.base import MAX_PIECE, Phonemized
from speech_to_speech.tts.hibari_timing import TimedHibari
from speech_to_speech.visemes.acoustic import AcousticVisemes
from speech_to_speech.visemes.timeline import Segment, align, slice_chunk

TEXT = ("Paris is the capital of France, and it is famous for the Eiffel Tower. Bob made maple muffins. "
        "We should go to the zoo today. Father saw a huge blue boat. I see three green trees.")
ROUNDS = 10
FRAME = TTS_RATE // 50  # 20 ms
VOWELS = {"aa", "E", "ih", "oh", "ou"}


def by_phonemes(spoken: Phonemized, audio: np.ndarray, durations: bool) -> list[Segment]:
    if durations:
        return align(spoken.phonemes, audio, TTS_RATE, spoken.durations, spoken.start)
    return align(spoken.phonemes, audio, TTS_RATE)


def by_audio(audio: np.ndarray) -> list[Segment]:
    """The acoustic route as the stage runs it: chunk by chunk, back to one list."""
    acoustic = AcousticVisemes(TTS_RATE)
    segments: list[Segment] = []
    for start in range(0, len(audio), MAX_PIECE):
        segments += [Segment(s.viseme, s.start + start, s.end + start)
                     for s in acoustic.segments(audio[start : start + MAX_PIECE])]
    return segments


def chunked(segments: list[Segment], length: int) -> None:
    for start in range(0, length, MAX_PIECE):
        slice_chunk(segments, start, min(start + MAX_PIECE, length), TTS_RATE)


def viseme_at(segments: list[Segment], sample: int) -> str:
    return next(s.viseme for s in segments if s.start <= sample < s.end)


def main() -> None:
    tts = Hibari()
    timed = TimedHibari.load(tts)
    rng = np.random.default_rng(0)
    if timed is not None:
        spoken = [timed.speak(ps, 1.0, rng) for ps in tts.phonemize(TEXT)]
    else:
        print("no onnx package: no model durations, so no agreement figures")
        spoken = [Phonemized(tts.from_ids(tts.ids(ps), 1.0, rng), ps) for ps in tts.phonemize(TEXT)]
    sentences = [(s, to_int16(s.audio)) for s in spoken]
    seconds = sum(len(audio) for _, audio in sentences) / TTS_RATE

    routes: dict[str, Callable[[Phonemized, np.ndarray], list[Segment]]] = {
        "phonemes with the model's durations": lambda s, a: by_phonemes(s, a, True),
        "phonemes, durations estimated": lambda s, a: by_phonemes(s, a, False),
        "audio": lambda s, a: by_audio(a),
    }
    if timed is None:
        del routes["phonemes with the model's durations"]
    for name, route in routes.items():
        started = time.process_time()
        for _ in range(ROUNDS):
            for s, audio in sentences:
                chunked(route(s, audio), len(audio))
        per_second = (time.process_time() - started) / ROUNDS / seconds * 1000
        print(f"{name}: {per_second:.2f} ms of CPU per second of speech ({seconds:.1f} s)")

    if timed is None:
        return
    for name in ("phonemes, durations estimated", "audio"):
        same, vowels = [], []
        for s, audio in sentences:
            reference, candidate = by_phonemes(s, audio, True), routes[name](s, audio)
            for sample in range(FRAME // 2, len(audio), FRAME):
                expected = viseme_at(reference, sample)
                same.append(viseme_at(candidate, sample) == expected)
                if expected in VOWELS:
                    vowels.append(same[-1])
        print(f"{name}: the model-timed viseme on {np.mean(same):.0%} of 20 ms frames "
              f"({np.mean(vowels):.0%} of vowel frames)")


if __name__ == "__main__":
    main()
