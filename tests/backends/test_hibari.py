"""hibari, the default TTS: 24 kHz speech that Whisper can read back; unknown voices fall back."""

from __future__ import annotations

import logging
import re
from typing import Any

import numpy as np
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TranscriptText, TTSInput
from speech_to_speech.tts.hibari import HibariTTS

pytestmark = pytest.mark.real_models


def synthesize(tts: HibariTTS, text: str, voice: str | None = None) -> tuple[list[Any], np.ndarray]:
    items = list(tts.process(TTSInput("resp_1", 0, text, voice=voice)))
    audio = [i for i in items if isinstance(i, AudioOutput)]
    return items, np.concatenate([a.samples for a in audio])


def test_speech_is_24k_and_reads_back(hibari_voices: Any, whisper: Any, make_handler: Any) -> None:
    from speech_to_speech.stt.faster_whisper import FasterWhisperSTT

    tts = make_handler(HibariTTS, hibari_voices)
    text = "Paris is the capital of France, and it is famous for the Eiffel Tower."
    items, pcm = synthesize(tts, text)
    assert isinstance(items[0], TranscriptText) and items[0].text == text
    audio = [i for i in items if isinstance(i, AudioOutput)]
    assert all(a.sample_rate == 24000 and a.samples.dtype == np.int16 for a in audio)
    seconds = len(pcm) / 24000
    assert 2.0 < seconds < 8.0
    assert np.abs(pcm).max() > 3000  # audible, not silence

    stt = make_handler(FasterWhisperSTT, whisper)
    heard = stt.transcribe(resample(pcm, 24000, 16000), "en").text
    assert {"paris", "capital", "france", "eiffel", "tower"} <= set(re.findall(r"[a-z]+", heard.lower()))


def test_unknown_voice_falls_back_to_the_default(
    hibari_voices: Any, make_handler: Any, caplog: pytest.LogCaptureFixture
) -> None:
    tts = make_handler(HibariTTS, hibari_voices)
    with caplog.at_level(logging.DEBUG, logger="speech_to_speech.tts.hibari"):
        _, pcm = synthesize(tts, "Hello there.", voice="alloy")
    assert len(pcm) > 0.3 * 24000
    assert any("alloy" in r.getMessage() for r in caplog.records)
    assert hibari_voices.get("alloy") is hibari_voices.get(None)


def test_a_stale_response_stops_synthesis(hibari_voices: Any, make_handler: Any) -> None:
    tts = make_handler(HibariTTS, hibari_voices)
    stream = tts.process(TTSInput("resp_1", 0, "First sentence here. Second sentence here. Third one too."))
    assert isinstance(next(stream), TranscriptText)
    assert any(isinstance(item, AudioOutput) for item in stream)  # runs up to the first audio piece
    tts.cancel_scope.cancel()
    assert list(stream) == []


def _silent_ms(pcm: np.ndarray, at_end: bool = False) -> float:
    loud = np.flatnonzero(np.abs(pcm) >= 33)  # -60 dBFS
    return (len(pcm) - 1 - loud[-1] if at_end else loud[0]) * 1000 / 24000


def test_replies_start_sounding_at_once_and_pause_as_their_text_does(hibari_voices: Any, make_handler: Any) -> None:
    """hibari pads every synthesis with ~300 ms of silence before and ~500 ms after; we cut it down."""
    tts = make_handler(HibariTTS, hibari_voices)
    _, first_words = synthesize(tts, "The moon is approximately")  # a reply's first words, cut mid-phrase
    _, sentence = synthesize(tts, "It is far away.")
    assert _silent_ms(first_words) <= 40 and _silent_ms(sentence) <= 40
    assert _silent_ms(first_words, at_end=True) <= 60  # runs on into the rest of the sentence
    assert 150 <= _silent_ms(sentence, at_end=True) <= 300  # a sentence's pause
