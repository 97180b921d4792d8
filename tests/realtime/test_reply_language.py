"""The reply speaks the user's language: the language the STT heard, or the session's, reaches the LLM
as the language to answer in, within what the voice can say."""

from __future__ import annotations

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.protocol import TIMINGS_EXTENSION
from speech_to_speech.protocol.metadata import HEARD_LANGUAGE_KEY
from speech_to_speech.realtime.tools.preamble import PHRASES
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


async def _preamble_of_a_call(server_url: str) -> str:
    """Speak one turn whose reply calls a function at once: what the server said before the call."""
    async with RealtimeTestClient.connect(server_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"tools": [{"type": "function", "name": "look_up_order",
                                                "parameters": {"type": "object"}}]})
        await client.append_audio(spoken_turn(RATE), RATE)
        done = await client.wait_for("response.done")
    message = next(item for item in done["response"]["output"] if item["type"] == "message")
    return str(message["content"][0]["transcript"]).strip()


async def test_the_preamble_is_said_in_the_language_the_user_was_heard_in(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["[fr] Où en est la commande 55 ?"],
                         scripted_replies=['<tool_call>look_up_order {"order_number": "55"}</tool_call>'])
    assert await _preamble_of_a_call(server.ws_url) in PHRASES["fr"]


async def test_the_preamble_is_in_the_voice_s_language_when_it_cannot_speak_the_user_s(
        make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["[de] Wo ist die Bestellung 55?"], tts_supported_languages=["en"],
                         scripted_replies=['<tool_call>look_up_order {"order_number": "55"}</tool_call>'])
    assert await _preamble_of_a_call(server.ws_url) in PHRASES["en"]
