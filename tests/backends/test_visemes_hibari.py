"""Visemes from the real default TTS over the wire: its phonemes decide where the lips close."""

from __future__ import annotations

from typing import Any

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.speech_output import SpokenPhonemes, TTSInput
from speech_to_speech.protocol import VISEMES_EXTENSION, Event
from speech_to_speech.testing.client_audio import decode_audio
from speech_to_speech.testing.engine import loading
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import FAST_SCRIPTED
from speech_to_speech.testing.server import running_server
from speech_to_speech.tts.hibari import HibariTTS, load_hibari

pytestmark = pytest.mark.real_models

RATE = 24000


def _mouth(events: list[Event]) -> list[str]:
    """The answer's visemes in order, repeats and silence left out."""
    shapes: list[str] = []
    for event in events:
        for cue in event.get("visemes", []):
            if cue["viseme"] != "sil" and (not shapes or shapes[-1] != cue["viseme"]):
                shapes.append(cue["viseme"])
    return shapes


async def test_bob_closes_the_lips_and_hello_does_not() -> None:
    settings = ServerSettings(**{**FAST_SCRIPTED, "tts": "hibari", "enable_visemes": True,
                                 "scripted_replies": ["Hello.", "Bob."]})
    answers: list[list[Event]] = []
    with running_server(settings) as server:
        async with RealtimeTestClient.connect(server.ws_url, timeout=30) as client:
            await client.wait_for("session.created")
            await client.update_session({"extensions": [VISEMES_EXTENSION]})
            for _ in range(2):
                await client.send("response.create")
                answers.append(await client.collect_until("response.done"))

    hello, bob = answers
    for events in answers:
        visemes = [e for e in events if e["type"] == VISEMES_EXTENSION]
        deltas = [e for e in events if e["type"] == "response.output_audio.delta"]
        assert len(visemes) == len(deltas) > 0
        assert {e["source"] for e in visemes} == {"phonemes"}  # hibari says what it spoke
        audio_ms = sum(len(decode_audio(e["delta"])) for e in deltas) * 1000 / RATE
        assert abs(sum(c["duration_ms"] for e in visemes for c in e["visemes"]) - audio_ms) < 20

    bob_mouth, hello_mouth = _mouth(bob), _mouth(hello)
    assert bob_mouth[0] == "PP" and bob_mouth[-1] == "PP"  # b ... b: lips closed at both ends
    assert "aa" in bob_mouth  # the open o between them
    assert "PP" not in hello_mouth  # h-e-l-o never closes the lips
    assert "oh" in hello_mouth  # it ends rounded


def test_hibari_times_each_phoneme_with_its_own_durations(make_handler: Any) -> None:
    pytest.importorskip("onnx")
    settings = ServerSettings(enable_visemes=True)
    tts = make_handler(HibariTTS, load_hibari(*loading("tts", settings)), settings)
    items = list(tts.process(TTSInput("resp_1", 0, "Bob. Hello there.")))
    told = [i for i in items if isinstance(i, SpokenPhonemes)]
    assert [t.phonemes for t in told] == ["bˈɑb.", "həlˈO ðˈɛɹ."]
    for spoken in told:
        assert spoken.durations is not None and len(spoken.durations) == len(spoken.phonemes)
        assert all(d > 0 for d in spoken.durations)
        # Its padding cut (tts/padding.py), every timed phoneme still lies whole inside the audio.
        assert spoken.start >= 0 and spoken.start + sum(spoken.durations) <= spoken.samples
