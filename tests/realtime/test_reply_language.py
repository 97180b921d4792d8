"""The reply speaks the user's language: the language the STT heard, or the session's, reaches the LLM
as the language to answer in, within what the voice can say."""

from __future__ import annotations

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.protocol import TIMINGS_EXTENSION
from speech_to_speech.protocol.metadata import HEARD_LANGUAGE_KEY
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

RATE = 24000


async def _one_spoken_turn(server_url: str, session: dict[str, object] | None = None) -> str:
    """Speak one turn and hear its answer out; the session's instructions."""
    async with RealtimeTestClient.connect(server_url) as client:
        created = await client.wait_for("session.created")
        if session:
            await client.update_session(session)
        await client.append_audio(spoken_turn(RATE), RATE)
        done = await client.wait_for("response.done")
        assert done["response"]["status"] == "completed"
        return str(created["session"]["instructions"])


async def test_speech_heard_in_french_is_answered_in_french(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["[fr] Quelle est la capitale de l'Italie ?"])
    await _one_spoken_turn(server.ws_url)
    request = llm_requests[-1]
    assert request.language == "fr"
    assert request.instructions is not None and request.instructions.endswith("Answer in French only.")


async def test_english_speech_is_asked_as_before(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["What is the capital of Italy?"])
    instructions = await _one_spoken_turn(server.ws_url)
    request = llm_requests[-1]
    assert request.language == "en" and request.instructions == instructions  # untouched


async def test_an_english_only_voice_answers_other_speech_in_english(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["[de] Was ist die Hauptstadt von Spanien?"],
                         tts_supported_languages=["en"])
    await _one_spoken_turn(server.ws_url, {"instructions": "Be brief."})
    request = llm_requests[-1]
    assert request.language == "en"
    assert request.instructions is not None and request.instructions.startswith("Be brief.\n")
    assert request.instructions.endswith("Answer in English only, even when the user speaks German.")


async def test_the_session_language_wins_over_what_was_heard(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["[fr] Bonjour."], stt_supported_languages=["es"],
                         tts_supported_languages=["es"])
    await _one_spoken_turn(server.ws_url, {"audio": {"input": {"transcription": {"language": "es"}}}})
    assert llm_requests[-1].language == "es" and "Answer in Spanish only." in (llm_requests[-1].instructions or "")


async def test_the_heard_language_is_reported_with_the_timings(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["[ja] 東京です。", "Tokyo."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        heard = []
        for extensions in ([TIMINGS_EXTENSION], []):
            await client.update_session({"extensions": extensions})
            await client.append_audio(spoken_turn(RATE), RATE)
            done = await client.wait_for("response.done")
            heard.append((done["response"].get("metadata") or {}).get(HEARD_LANGUAGE_KEY))
    assert heard == ["ja", None]  # only with the timings extension
