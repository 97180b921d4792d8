"""Voice names over the wire: the TTS's voices and OpenAI's are accepted, any other name is refused.

The scripted TTS has two voices, ``tone`` (440 Hz) and ``low_tone`` (220 Hz);
OpenAI's names speak with the first.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import numpy as np
import pytest

from speech_to_speech.testing.client_audio import decode_audio
from speech_to_speech.testing.event_matchers import is_error_for
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import SCRIPTED_VOICES
from speech_to_speech.testing.server import RunningServer

from .conftest import ClientFactory, ServerFactory

BAD = "no-such-voice-abc"
# Enough of an offer for the server to read it; a call with a refused session is never answered.
SDP = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"


async def _refusal(client: RealtimeTestClient, event_id: str) -> dict[str, Any]:
    return dict((await client.wait_for(is_error_for(event_id)))["error"])


def _assert_lists_the_voices(error: dict[str, Any]) -> None:
    assert BAD in error["message"]
    for name in (*SCRIPTED_VOICES, "alloy", "marin", "cedar"):
        assert name in error["message"], (name, error["message"])


async def _answer(client: RealtimeTestClient, **response: Any) -> list[dict[str, Any]]:
    """One completed response's events (after a refusal: the session still answers)."""
    await client.send("response.create", **({"response": response} if response else {}))
    events = await client.collect_until("response.done")
    assert events[-1]["response"]["status"] == "completed"
    return events


def _pitch(events: list[dict[str, Any]]) -> float:
    """The frequency (Hz) of a response's audio, from its zero crossings."""
    audio = np.concatenate([decode_audio(e["delta"]) for e in events if e["type"] == "response.output_audio.delta"])
    crossings = np.count_nonzero(np.diff(np.signbit(audio.astype(np.float32))))
    return crossings / 2 / (len(audio) / 24000)


@pytest.mark.parametrize("patch, param", [
    ({"audio": {"output": {"voice": BAD}}}, "session.audio.output.voice"),
    ({"voice": BAD}, "session.voice"),  # beta clients' field
])
async def test_an_unknown_voice_is_refused_and_the_session_keeps_its_voice(
        connect: ClientFactory, patch: dict[str, Any], param: str) -> None:
    async with connect() as client:
        await client.update_session({"audio": {"output": {"voice": "low_tone"}}})
        event_id = await client.send("session.update", session={"type": "realtime", "instructions": "Hi.", **patch})
        error = await _refusal(client, event_id)
        assert (error["type"], error["code"], error["param"], error["event_id"]) == (
            "invalid_request_error", "invalid_value", param, event_id)
        _assert_lists_the_voices(error)
        session = (await client.update_session({}))["session"]
        assert session["audio"]["output"]["voice"] == "low_tone"
        assert session["instructions"] != "Hi."  # nothing of the refused update was applied
        assert abs(_pitch(await _answer(client)) - SCRIPTED_VOICES["low_tone"]) < 20


@pytest.mark.parametrize("voice", ["alloy", "marin", "cedar", "nova", "tone", "low_tone"])
async def test_openai_names_and_installed_voices_are_accepted(connect: ClientFactory, voice: str) -> None:
    async with connect() as client:
        updated = await client.update_session({"audio": {"output": {"voice": voice}}})
        assert updated["session"]["audio"]["output"]["voice"] == voice
        expected = SCRIPTED_VOICES.get(voice, SCRIPTED_VOICES["tone"])  # OpenAI's names: the default voice
        assert abs(_pitch(await _answer(client)) - expected) < 20


async def test_a_beta_voice_field_sets_the_session_voice(connect: ClientFactory) -> None:
    async with connect() as client:
        updated = await client.update_session({"voice": "low_tone"})
        assert updated["session"]["audio"]["output"]["voice"] == "low_tone"
        assert "voice" not in updated["session"]


@pytest.mark.parametrize("response, param", [
    ({"audio": {"output": {"voice": BAD}}}, "response.audio.output.voice"),
    ({"voice": BAD}, "response.voice"),
])
async def test_a_response_with_an_unknown_voice_is_refused(connect: ClientFactory, response: dict[str, Any],
                                                           param: str) -> None:
    async with connect() as client:
        event_id = await client.send("response.create", response=response)
        error = await _refusal(client, event_id)
        assert (error["code"], error["param"], error["event_id"]) == ("invalid_value", param, event_id)
        _assert_lists_the_voices(error)
        events = await _answer(client, audio={"output": {"voice": "low_tone"}})
        created = next(e for e in events if e["type"] == "response.created")
        assert created["response"]["audio"]["output"]["voice"] == "low_tone"


async def _post_call(server: RunningServer, session: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.http_url, timeout=10) as http:
        return await http.post("/v1/realtime/calls", files={"sdp": (None, SDP), "session": (None, json.dumps(session))})


async def test_a_call_opening_with_an_unknown_voice_is_refused_with_400(make_server: ServerFactory) -> None:
    pytest.importorskip("aiortc")  # without it every call is 501, before its session is read
    server = make_server()
    response = await _post_call(server, {"type": "realtime", "audio": {"output": {"voice": BAD}}})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_value", "session.audio.output.voice")
    _assert_lists_the_voices(error)
    assert all(slot.state == "idle" for slot in server.pool.status())  # no unit was claimed
