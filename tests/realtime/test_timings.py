"""The opt-in timings extension: stage timestamps of a turn in response.done metadata."""

from __future__ import annotations

import json

from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import RunningServer

from .conftest import ClientFactory, ServerFactory

RATE = 24000
STAGES = ["vad_end_of_speech", "stt_done", "llm_first_token", "tts_first_audio", "first_audio_sent"]


async def _timed_turn(server: RunningServer) -> dict[str, float]:
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"type": "realtime", "extensions": ["speech_to_speech.timings"]})
        await client.append_audio(spoken_turn(RATE), RATE)
        done = (await client.response_cycle())[-1]
    assert done["response"]["status"] == "completed"
    marks: dict[str, float] = json.loads(done["response"]["metadata"]["s2s_timings"])
    return marks


async def test_timings_extension_reports_stage_marks_in_order(make_server: ServerFactory) -> None:
    marks = await _timed_turn(make_server(speculation_silence_ms=0))
    assert set(STAGES) <= set(marks)
    # Without speculation, the pipeline's order: speech ends, STT finishes, the LLM starts,
    # the TTS speaks, audio goes out.
    values = [marks[name] for name in STAGES]
    assert values == sorted(values)


async def test_a_speculative_reply_is_never_sent_before_the_turn_ends(make_server: ServerFactory) -> None:
    marks = await _timed_turn(make_server())
    assert set(STAGES) <= set(marks)
    # The reply may be generated during the pause, but audio leaves only after the turn's end.
    assert marks["first_audio_sent"] >= marks["vad_end_of_speech"]
    assert marks["first_audio_sent"] >= marks["stt_done"]


async def test_timings_are_absent_without_the_extension(connect: ClientFactory) -> None:
    async with connect() as client:
        await client.append_audio(spoken_turn(RATE), RATE)
        done = (await client.response_cycle())[-1]
    assert "s2s_timings" not in (done["response"]["metadata"] or {})


async def test_explicit_response_metadata_keeps_client_keys_beside_timings(connect: ClientFactory) -> None:
    async with connect() as client:
        await client.update_session({"type": "realtime", "extensions": ["speech_to_speech.timings"]})
        await client.send("response.create", response={"metadata": {"topic": "weather"}})
        done = (await client.response_cycle())[-1]
    metadata = done["response"]["metadata"]
    assert metadata["topic"] == "weather"
    marks = json.loads(metadata["s2s_timings"])
    assert marks["created"] <= marks["llm_first_token"] <= marks["first_audio_sent"]
