"""The Smart Turn model on committed speech: its features, its decisions, its cancellation, its absence."""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.wav import read_wav
from speech_to_speech.config import ServerSettings
from speech_to_speech.cpu.gate import CpuGate
from speech_to_speech.pipeline.messages.turn_taking import TurnVerdict
from speech_to_speech.vad.smart_turn import FRAMES, SmartTurnModel, WhisperFeatures, packaged_model_path
from speech_to_speech.vad.turn_detector import TurnDetector, load_turn_detector

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "turns"
PAD = np.zeros(3200, dtype=np.float32)  # the 200 ms pause after which the detector is asked


def speech(name: str) -> np.ndarray:
    samples, _ = read_wav(FIXTURES / f"{name}.wav", 16000)
    return np.concatenate([samples, PAD])


@pytest.fixture(scope="module")
def model() -> SmartTurnModel:
    path = packaged_model_path()
    assert path is not None, "the Smart Turn weights (pipecat-ai wheel) are part of the dev install"
    return SmartTurnModel(path)


def test_features_match_whisper_feature_extraction_of_transformers() -> None:
    """Our log-mel features equal transformers' WhisperFeatureExtractor over an 8 s window."""
    from transformers import WhisperFeatureExtractor

    audio = speech("finished_twelve_fifteen")
    ours = WhisperFeatures()(audio)
    window = np.pad(audio, (128000 - len(audio), 0))
    reference = WhisperFeatureExtractor(chunk_length=8)(
        window, sampling_rate=16000, padding="max_length", max_length=128000, truncation=True,
        do_normalize=True, return_tensors="np").input_features[0]
    assert ours.shape == reference.shape == (80, FRAMES)
    assert np.abs(ours - reference).max() < 1e-3


def test_longer_audio_is_cut_to_its_last_eight_seconds() -> None:
    features = WhisperFeatures()
    tail = speech("finished_twelve_fifteen")
    long = np.concatenate([np.random.default_rng(0).normal(0, 0.1, 16000 * 9).astype(np.float32), tail])
    assert np.allclose(features(long), features(long[-128000:]))


def test_a_finished_question_and_a_phrase_left_hanging_are_told_apart(model: SmartTurnModel) -> None:
    finished = model.probability(speech("finished_twelve_fifteen"))  # "What is twelve times fifteen?"
    unfinished = model.probability(speech("unfinished_rome_uh"))  # "Tell me about … ancient Rome, uh,"
    assert finished >= 0.8 and unfinished <= 0.2, (finished, unfinished)


def test_the_decision_matches_the_reference_implementation(model: SmartTurnModel) -> None:
    """The same weights run by pipecat's analyzer (a dev dependency; never imported at run time)."""
    from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3

    reference = LocalSmartTurnAnalyzerV3(smart_turn_model_path=str(model.path))
    for name in ("finished_twelve_fifteen", "unfinished_rome_uh", "continuation_rome"):
        audio = speech(name)
        assert model.probability(audio) == pytest.approx(reference._predict_endpoint(audio)["probability"],
                                                          abs=0.02), name


class GatedModel:
    """Stands in for the model where a test must hold a worker: blocks until released, then scores 1."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def probability(self, samples: np.ndarray) -> float:
        self.calls += 1
        self.release.wait(10)
        return 1.0


def test_a_question_about_a_pause_that_is_over_is_skipped_and_still_answered() -> None:
    gated = GatedModel()
    detector = TurnDetector(gated, workers=1)  # type: ignore[arg-type]
    replies = queue.Queue[TurnVerdict]()
    current = [1]
    try:
        for pause in (1, 2):
            detector.ask(np.zeros(1600, np.float32), item_id="a", pause=pause,
                         still_wanted=lambda pause=pause: current[0] == pause, reply_to=replies)
        current[0] = 3  # the user spoke again: neither pause matters now; the second has not started
        gated.release.set()
        first, second = replies.get(timeout=10), replies.get(timeout=10)
    finally:
        detector.close()
    assert (first.pause, first.probability) == (1, 1.0)  # it was already running
    assert (second.pause, second.probability) == (2, None)  # skipped: the VAD falls back to silence
    assert gated.calls == 1


def test_a_verdict_is_urgent_work_that_holds_a_cpu_while_it_runs() -> None:
    gate = CpuGate(lambda: 2)
    gated = GatedModel()
    detector = TurnDetector(gated, workers=1, gate=gate)  # type: ignore[arg-type]
    replies = queue.Queue[TurnVerdict]()
    try:
        detector.ask(np.zeros(1600, np.float32), item_id="c", pause=1, still_wanted=lambda: True,
                     reply_to=replies)
        deadline = time.monotonic() + 10
        while not gated.calls and time.monotonic() < deadline:
            time.sleep(0.01)
        # A prompt read ahead gets only what is left beside it (and beside the STT pass, nothing).
        during = (gate.busy, gate.spare_threads(2))
        with gate.urgent(1):
            beside_stt = gate.spare_threads(2)
        gated.release.set()
        replies.get(timeout=10)
    finally:
        detector.close()
    assert during == (True, 1) and beside_stt == 0
    assert not gate.busy and gate.spare_threads(2) == 2  # and gives it back with its verdict


def test_a_model_that_fails_gives_no_answer_instead_of_stalling_the_turn() -> None:
    class Broken:
        def probability(self, samples: np.ndarray) -> float:
            raise RuntimeError("onnxruntime said no")

    detector = TurnDetector(Broken(), workers=1)  # type: ignore[arg-type]
    replies = queue.Queue[TurnVerdict]()
    try:
        detector.ask(np.zeros(1600, np.float32), item_id="b", pause=1, still_wanted=lambda: True,
                     reply_to=replies)
        verdict = replies.get(timeout=10)
    finally:
        detector.close()
    assert (verdict.item_id, verdict.probability) == ("b", None)


def test_missing_weights_fall_back_to_silence_with_one_clear_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    settings = ServerSettings(smart_turn_model="/nonexistent/smart-turn.onnx")
    assert load_turn_detector(settings.turns, 1) is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "pipecat-ai" in warnings[0] and "--turn_detector silence" in warnings[0]


def test_the_silence_rule_loads_no_model(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    assert load_turn_detector(ServerSettings(turn_detector="silence").turns, 1) is None
    assert not caplog.records
