"""The spoken-turn corpus of ``bench turns``: natural requests, spoken by hibari, cached as WAVs.

A request is a list of segments, each followed by a pause shorter than the
server's end-of-turn silence: the pauses people leave between sentences and
after an "um", which a turn detector must sit through. The words are data
(``turns_corpus.json``, shipped with the package); the audio is made from
them with the same hibari voice and seed as the latency questions
(:func:`audio.synthesize`), every segment trimmed to its voiced span and
joined with exactly ``pause_ms`` of digital silence, so the pause the server
hears is the one written down. Clips are cached under the speech-to-speech
cache dir, keyed by a hash of everything that shapes their samples; a run
after the first synthesises nothing.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech.audio.wav import read_wav, write_wav
from speech_to_speech.bench import audio
from speech_to_speech.bench.split_speech import split_at_words
from speech_to_speech.cache import cache_root

log = logging.getLogger(__name__)

DEFAULT_CORPUS = Path(__file__).with_name("turns_corpus.json")
# Bump when the way segments become a clip (or the voice and seed they are spoken with) changes:
# old cached clips are then not reused.
ASSEMBLY_VERSION = 1
# Of spoken_as_one clips: 3 ends a phrase before hibari's space between two words and starts the next
# at it; 2 cut in the middle of that space (the next word's onset leaked); 1 used Whisper's timestamps.
SPLIT_VERSION = 3

Synthesize = Callable[[list[str], int], list[audio.Samples]]


@dataclass(frozen=True)
class Segment:
    text: str
    pause_ms: int  # silence after this segment; 0 after the last


@dataclass(frozen=True)
class Request:
    name: str
    text: str  # everything said, the segments joined by spaces
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class Corpus:
    requests: tuple[Request, ...]
    voiced_s: tuple[float, float]  # every clip's voiced span lies within these bounds
    max_pause_ms: int  # the longest pause inside a request
    # Each request is spoken as one sentence and its pauses put inside it (see split_speech), so a
    # phrase before a pause keeps the tone of a sentence that goes on.
    spoken_as_one: bool = False


def load_corpus(path: Path = DEFAULT_CORPUS) -> Corpus:
    """Read and check a corpus file: unique names, pauses in bounds, text that matches its segments."""
    raw = json.loads(path.read_text())
    low, high = (float(v) for v in raw["voiced_s"])
    corpus = Corpus(
        requests=tuple(
            Request(entry["name"], entry["text"],
                    tuple(Segment(seg["text"], int(seg["pause_ms"])) for seg in entry["segments"]))
            for entry in raw["requests"]
        ),
        voiced_s=(low, high),
        max_pause_ms=int(raw["max_pause_ms"]),
        spoken_as_one=bool(raw.get("spoken_as_one", False)),
    )
    problems = [f"{r.name}: {problem}" for r in corpus.requests for problem in _problems(r, corpus.max_pause_ms)]
    names = [r.name for r in corpus.requests]
    problems += [f"{name}: the name is used twice" for name in sorted({n for n in names if names.count(n) > 1})]
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return corpus


def _problems(request: Request, max_pause_ms: int) -> list[str]:
    if not request.segments:
        return ["no segments"]
    found = []
    if " ".join(s.text for s in request.segments) != request.text:
        found.append("the text is not its segments joined by spaces")
    if request.segments[-1].pause_ms != 0:
        found.append("the last segment has a pause (the bench's silence ends the turn)")
    found += [f"pause {s.pause_ms} ms after {s.text!r} is outside 0..{max_pause_ms}"
              for s in request.segments if not 0 <= s.pause_ms <= max_pause_ms]
    return found


def assemble(pieces: Sequence[audio.Samples], pauses_ms: Sequence[int], rate: int) -> audio.Samples:
    """The segments' voiced spans, each followed by exactly its pause of zeros.

    The TTS pads every sentence with a few hundred ms of near-silence; kept,
    it would lengthen the pauses past the server's end-of-turn silence.
    """
    parts = []
    for piece, pause_ms in zip(pieces, pauses_ms, strict=True):
        bounds = audio.voiced_bounds(piece, rate)
        if bounds is None:
            raise ValueError("a segment came out silent")
        parts += [piece[bounds[0]: bounds[1]], np.zeros(pause_ms * rate // 1000, np.float32)]
    return np.concatenate(parts).astype(np.float32)


def cache_key(request: Request, rate: int, spoken_as_one: bool = False) -> str:
    """A hash of what shapes a clip's samples: the segments, the rate, the voice package, the assembly."""
    shape: dict[str, Any] = {"segments": [asdict(s) for s in request.segments], "rate": rate,
                             "assembly": ASSEMBLY_VERSION, "hibari": _version("hibari-tts")}
    if spoken_as_one:
        shape["spoken_as_one"] = SPLIT_VERSION
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def default_cache_dir() -> Path:
    return cache_root() / "bench" / "turns"


def clips(corpus: Corpus, limit: int | None = None, *, rate: int = audio.RATE, cache_dir: Path | None = None,
          synthesize: Synthesize = audio.synthesize) -> list[audio.Speech]:
    """The first ``limit`` requests as clips: read from the cache, the missing ones synthesised (in one go).

    A clip is always the cached WAV as read back, so a fresh run and a cached
    one send the same samples.
    """
    folder = default_cache_dir() if cache_dir is None else cache_dir
    requests = corpus.requests[:limit]
    paths = {r.name: folder / f"{r.name}-{cache_key(r, rate, corpus.spoken_as_one)}.wav" for r in requests}
    missing = [r for r in requests if not paths[r.name].exists()]
    if missing:
        log.info("synthesising %d corpus request(s) with hibari into %s", len(missing), folder)
        if corpus.spoken_as_one:
            for request in missing:
                samples = split_at_words(request.text, rate, [len(s.text.split()) for s in request.segments],
                                         [s.pause_ms for s in request.segments])
                _write_atomically(paths[request.name], samples, rate)
        else:
            texts = [s.text for r in missing for s in r.segments]
            spoken = iter(synthesize(texts, rate))
            for request in missing:
                pieces = [next(spoken) for _ in request.segments]
                samples = assemble(pieces, [s.pause_ms for s in request.segments], rate)
                _write_atomically(paths[request.name], samples, rate)
    loaded = []
    for request in requests:
        samples, _ = read_wav(paths[request.name], rate)
        clip = audio.speech(request.name, request.text, samples, rate)
        low, high = corpus.voiced_s
        if not low <= clip.voiced_ms / 1000.0 <= high:
            raise ValueError(f"{request.name}: {clip.voiced_ms / 1000.0:.2f} s of speech, outside {low}..{high} s")
        loaded.append(clip)
    return loaded


def _write_atomically(path: Path, samples: audio.Samples, rate: int) -> None:
    """Write via a temporary file renamed into place: a crash or a parallel run never leaves half a WAV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".wav", dir=path.parent)
    os.close(handle)
    try:
        write_wav(staging, samples, rate)
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.unlink(staging)


def describe(clip: audio.Speech) -> dict[str, Any]:
    """What the results record of a clip: its voiced span and the longest pause inside it (ms).

    The longest pause includes the TTS's own pauses at commas; it must stay
    under the server's ``min_silence_ms`` or the request is two turns.
    """
    return {"name": clip.name, "speech_ms": round(clip.voiced_ms, 1),
            "longest_pause_ms": audio.longest_pause_ms(clip.samples, clip.rate)}
