"""The real default models over the wire, driven by the openai SDK's Realtime client."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from openai import AsyncOpenAI

from speech_to_speech.audio.resample import resample
from speech_to_speech.config import ServerSettings
from speech_to_speech.testing.engine import loading
from speech_to_speech.testing.server import RunningServer, running_server
from speech_to_speech.testing.server_event_schema import validate_server_event

pytestmark = pytest.mark.real_models
RATE = 24000


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with running_server(ServerSettings(log_level="warning")) as running:
        yield running


def synthesise(text: str) -> np.ndarray:
    from speech_to_speech.tts.hibari import load_hibari

    speech = load_hibari(*loading("tts", ServerSettings())).get(None)(text, seed=0)
    return np.concatenate([np.zeros(RATE // 4, np.float32), speech, np.zeros(RATE, np.float32)])


def transcribe(pcm: bytes) -> str:
    from speech_to_speech.stt.faster_whisper import load_faster_whisper

    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    whisper = load_faster_whisper(*loading("stt", ServerSettings()))
    segments, _ = whisper.transcribe(resample(audio, RATE, 16000), language="en")
    return " ".join(segment.text for segment in segments).strip()


async def spoken_turn(server: RunningServer, question: str) -> list[dict[str, Any]]:
    client = AsyncOpenAI(api_key="not-needed", websocket_base_url=f"ws://127.0.0.1:{server.port}/v1")
    events: list[dict[str, Any]] = []
    async with client.realtime.connect(model="speech-to-speech") as connection:
        pcm = (synthesise(question) * 32767).astype("<i2").tobytes()
        step = RATE // 10 * 2  # 100 ms of PCM16
        for start in range(0, len(pcm), step):
            await connection.input_audio_buffer.append(audio=base64.b64encode(pcm[start : start + step]).decode())
        async for event in connection:
            raw = event.model_dump(mode="json", exclude_unset=True)
            validate_server_event(raw)
            events.append(raw)
            if event.type == "response.done":
                return events
    raise AssertionError("the connection closed before response.done")


async def test_a_spoken_question_gets_a_spoken_answer_with_the_default_models(server: RunningServer) -> None:
    events = await spoken_turn(server, "What is the capital of France?")
    kinds = [e["type"] for e in events]
    completed = next(e for e in events if e["type"] == "conversation.item.input_audio_transcription.completed")
    assert "capital" in completed["transcript"].lower() and "france" in completed["transcript"].lower()
    assert events[-1]["response"]["status"] == "completed"
    assert "input_audio_buffer.speech_started" in kinds and "response.created" in kinds
    answer = b"".join(base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta")
    assert len(answer) > RATE  # more than half a second of PCM16
    assert transcribe(answer)  # real speech: Whisper hears words in it


async def test_transcript_deltas_of_the_real_llm_add_up_to_the_done_transcript(server: RunningServer) -> None:
    events = await spoken_turn(server, "Tell me two short facts about the moon.")
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    (done,) = [e["transcript"] for e in events if e["type"] == "response.output_audio_transcript.done"]
    assert done and deltas == done  # spaces and punctuation included, across sentence breaks
    item = events[-1]["response"]["output"][0]
    assert item["content"][0]["transcript"] == done


def test_capabilities_of_the_default_models(server: RunningServer) -> None:
    """The STT hears Whisper base's languages through its language check; the voice speaks English only."""
    import httpx

    pipeline = httpx.get(f"{server.http_url}/v1/realtime/capabilities", timeout=10).json()["pipelines"][0]
    english = [{"code": "en", "name": "english"}]
    heard = {entry["code"] for entry in pipeline["stt"]["languages"]}
    assert {"en", "fr", "de", "es", "ja"} <= heard and len(heard) == 99
    assert pipeline["stt"]["supports_language_selection"] and pipeline["stt"]["supports_auto"]
    assert pipeline["tts"]["languages"] == english and "heart" in pipeline["tts"]["voices"]
    assert pipeline["conversation"]["selectable_languages"] == english


def test_a_declaration_that_contradicts_the_models_is_a_startup_error() -> None:
    from speech_to_speech.realtime.app.server import build_app

    with pytest.raises(ValueError, match="stt_supported_languages"):
        build_app(ServerSettings(stt_supported_languages=["tlh"], log_level="warning"))  # Klingon: not Whisper's
