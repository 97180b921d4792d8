"""What the viseme stage costs: ms of CPU per second of speech, from phonemes and from the audio.

    python scripts/viseme_cost.py

Speaks a few sentences with hibari (the default TTS), then times the two routes of the
stage over that audio in 100 ms chunks, as the TTS hands them over: the phoneme route
(timing a sentence's phonemes, cutting them per chunk) and the acoustic one (classing
each chunk's 20 ms frames). The TTS itself is not timed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hibari import Hibari

from speech_to_speech.audio.resample import to_int16
from speech_to_speech.pipeline.messages import Int16Audio
from speech_to_speech.tts.base import MAX_PIECE, OUTPUT_RATE
from speech_to_speech.visemes.acoustic import AcousticVisemes
from speech_to_speech.visemes.timeline import align, slice_chunk

TEXT = "Paris is the capital of France, and it is famous for the Eiffel Tower. Bob made maple muffins."
ROUNDS = 20


def from_phonemes(sentences: list[tuple[str, Int16Audio]]) -> None:
    for phonemes, audio in sentences:
        segments = align(phonemes, audio, OUTPUT_RATE)
        for start in range(0, len(audio), MAX_PIECE):
            slice_chunk(segments, start, min(start + MAX_PIECE, len(audio)), OUTPUT_RATE)


def from_audio(sentences: list[tuple[str, Int16Audio]]) -> None:
    acoustic = AcousticVisemes(OUTPUT_RATE)
    for _, audio in sentences:
        for start in range(0, len(audio), MAX_PIECE):
            chunk = audio[start : start + MAX_PIECE]
            slice_chunk(acoustic.segments(chunk), 0, len(chunk), OUTPUT_RATE)


def main() -> None:
    tts = Hibari()
    sentences = [(ps, to_int16(tts.from_phonemes(ps, seed=0))) for ps in tts.phonemize(TEXT)]
    seconds = sum(len(audio) for _, audio in sentences) / OUTPUT_RATE
    routes: dict[str, Callable[[list[tuple[str, Int16Audio]]], None]] = {
        "phonemes": from_phonemes, "audio": from_audio}
    for name, route in routes.items():
        route(sentences)  # warm up
        started = time.process_time()
        for _ in range(ROUNDS):
            route(sentences)
        per_round = (time.process_time() - started) / ROUNDS
        print(f"{name}: {per_round * 1000 / seconds:.2f} ms of CPU per second of speech ({seconds:.1f} s timed)")


if __name__ == "__main__":
    main()
