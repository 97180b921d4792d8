"""Silero VAD on the packaged ONNX model: real speech starts and ends a turn, silence and noise do not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from speech_to_speech.audio.chunker import Chunker
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.input_audio import AudioChunk, SpeechStarted, SpeechStopped, Utterance
from speech_to_speech.testing.engine import loading
from speech_to_speech.vad.silero import SileroModel, SileroVAD, load_silero, packaged_model_path

pytestmark = pytest.mark.real_models
RATE = 16000


@pytest.fixture(scope="module")
def silero() -> SileroModel:
    return load_silero(*loading("vad", ServerSettings()))


def run_vad(vad: SileroVAD, audio: np.ndarray) -> tuple[list[Any], list[Any]]:
    """Feed ``audio`` through the VAD in 512-sample chunks; (utterances, events)."""
    outputs: list[Any] = []
    for chunk, offset in Chunker().push(audio):
        outputs.extend(vad.process(AudioChunk(chunk, offset)))
    assert vad.events is not None
    return outputs, [vad.events.get_nowait() for _ in range(vad.events.qsize())]


def test_model_ships_inside_the_package() -> None:
    path = packaged_model_path()
    assert path.name == "silero_vad.onnx" and path.stat().st_size > 1_000_000


def test_speech_makes_one_turn_with_its_audio(
    silero: SileroModel, spoken: Any, sentence: str, make_handler: Any
) -> None:
    speech = spoken(sentence)
    audio = np.concatenate([np.zeros(RATE, np.float32), speech, np.zeros(RATE, np.float32)])
    outputs, events = run_vad(make_handler(SileroVAD, silero), audio)

    kinds = [type(e) for e in events]
    assert kinds.count(SpeechStarted) == 1 and kinds.count(SpeechStopped) == 1
    assert kinds.index(SpeechStarted) < kinds.index(SpeechStopped)
    # Pauses inside the sentence may hand speculative partial turns to the STT first, and the speech so far
    # goes to it as interim utterances while it lasts.
    (utterance,) = [o for o in outputs if isinstance(o, Utterance) and not o.speculative and not o.interim]
    # The turn starts within the prefix pad before the speech, and holds all of it.
    assert 1000 - 300 - 100 <= utterance.audio_start_ms <= 1000 + 100
    assert len(utterance.samples) >= 0.9 * len(speech)
    assert len(utterance.samples) <= len(speech) + RATE  # not the whole trailing second of silence


def test_silence_and_quiet_noise_are_not_speech(silero: SileroModel, make_handler: Any) -> None:
    rng = np.random.default_rng(0)
    audio = np.concatenate(
        [np.zeros(2 * RATE, np.float32), 0.003 * rng.standard_normal(2 * RATE).astype(np.float32)]
    )
    outputs, events = run_vad(make_handler(SileroVAD, silero), audio)
    assert outputs == [] and events == []


def test_speech_scores_high_and_state_resets_per_session(
    silero: SileroModel, spoken: Any, sentence: str, make_handler: Any
) -> None:
    vad = make_handler(SileroVAD, silero)
    speech = spoken(sentence)
    chunks = [speech[i : i + 512] for i in range(0, len(speech) - 511, 512)]
    scores = [vad.speech_probability(c) for c in chunks]
    assert max(scores) > 0.9 and np.mean(scores) > 0.5

    vad.on_session_end()
    assert not vad._state.any() and not vad._context.any()
    assert vad.speech_probability(np.zeros(512, np.float32)) < 0.1


def test_without_the_context_speech_scores_near_zero(silero: SileroModel, spoken: Any, sentence: str) -> None:
    """Why the handler prepends 64 samples: fed bare 512-sample chunks, the model misses speech."""
    speech = spoken(sentence)
    state = silero.initial_state()
    bare = []
    for i in range(0, len(speech) - 511, 512):
        score, state = silero.score(speech[i : i + 512], state)
        bare.append(score)
    assert max(bare) < 0.1
