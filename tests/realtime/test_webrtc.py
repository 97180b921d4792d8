"""WebRTC calls with an aiortc client on 127.0.0.1: signalling, audio over RTP, events on the data channel.

The client offers as a browser does (no ICE candidates in the offer) and
gathers on 127.0.0.1 only; the server host is made to look like a container
whose only interface is loopback, and asking for a public STUN server fails
the call. Every server event on the data channel is checked against the GA
schema by the test client.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import httpx
import pytest

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.protocol import Event
from speech_to_speech.realtime.webrtc.signalling import ICE_SERVERS_ENV, ice_servers_from_env
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import is_error_for, of_response, types
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import RunningServer

from .conftest import ServerFactory, pool_states, wait_idle

pytestmark = pytest.mark.timeout(90)

RATE = 48000
LONG_REPLY = " ".join(f"Clause number {n} goes on, and on." for n in range(1, 11))
# Answers that outlast the user's interruption (40 ms a token: the long one takes over 3 s to generate)
# and whose audio runs far ahead of playback (60 ms of tone a character: the long one is 20 s).
SLOW: dict[str, Any] = {"scripted_token_delay_ms": 40.0, "scripted_tts_ms_per_char": 60.0}
SILENT_FRAMES = 15  # 300 ms of silence in a row on the received track
# Once the buffer is cleared, silence arrives within this many received frames (1.5 s of media; what is
# in flight and in the client's jitter buffer), while seconds of the answer were still queued.
CLEARED_WITHIN_FRAMES = 75


async def _post_offer(server: RunningServer, body: str | bytes, content_type: str = "application/sdp",
                      ) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.http_url, timeout=10) as http:
        return await http.post("/v1/realtime/calls", content=body, headers={"Content-Type": content_type})


async def _offer(rtc: ModuleType) -> str:
    """A browser-like offer (audio and the events channel, no candidates) from a peer closed right after."""
    from aiortc import RTCConfiguration, RTCPeerConnection

    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pc.addTransceiver("audio")
    pc.createDataChannel("oai-events")
    with rtc.loopback_candidates(only=True):
        await pc.setLocalDescription(await pc.createOffer())
    sdp = rtc.strip_candidates(pc.localDescription.sdp)
    await pc.close()
    return str(sdp)


def _json_error(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) >= {"type", "code", "message"}
    return dict(error)


def _response_id(events: list[Event]) -> str:
    return str(next(e for e in events if e["type"] == "response.created")["response"]["id"])


# ---------------------------------------------------------------- the call


async def test_a_spoken_call_over_webrtc(rtc: ModuleType, make_server: ServerFactory,
                                         llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["What is the capital of France?", "Tell me a long story.",
                                               "Stop, please."],
                         scripted_replies=["Paris is the capital of France.", LONG_REPLY, "Stopped."], **SLOW)
    async with rtc.webrtc_call(server.http_url) as call:
        # 201 with the answer and where the call lives; session.created is the channel's first message.
        assert call.answer.status_code == 201
        assert call.answer.headers["content-type"] == "application/sdp"
        assert call.location.startswith("/v1/realtime/calls/rtc_")
        assert "a=candidate:" in call.answer.text and "typ srflx" not in call.answer.text
        await call.events.wait_for("session.created")
        assert call.events.received[0].event["type"] == "session.created"
        assert await pool_states(server) == ["busy"]

        # A spoken question over RTP, a spoken answer over RTP, the transcripts on the channel.
        call.microphone.say(spoken_turn(RATE))
        question = await call.events.collect_until("response.done", timeout=20)
        answer_id = _response_id(question)
        completed = next(e for e in question if e["type"] == "conversation.item.input_audio_transcription.completed")
        assert completed["transcript"] == "What is the capital of France?"
        deltas = [e["delta"] for e in question if e["type"] == "response.output_audio_transcript.delta"]
        assert "".join(deltas) == "Paris is the capital of France."
        assert "response.output_audio.delta" not in types(question)  # the audio is on the track
        assert question[-1]["response"]["status"] == "completed"
        await call.speaker.wait_for_sound()
        played = await call.events.collect_until("output_audio_buffer.stopped", timeout=20)
        started = [e for e in question + played if e["type"] == "output_audio_buffer.started"]
        assert [e["response_id"] for e in started] == [answer_id]
        assert played[-1]["response_id"] == answer_id
        quiet = await call.speaker.wait_for_silence(SILENT_FRAMES)

        # Barge-in: speak over a long answer while it plays.
        call.microphone.say(spoken_turn(RATE))
        story = await call.events.collect_until("output_audio_buffer.started", timeout=20)
        story_id = _response_id(story)
        await call.speaker.wait_for_sound(after=quiet)
        call.microphone.say(spoken_turn(RATE))
        cut = await call.events.collect_until("conversation.item.truncated", timeout=20)
        cleared_at = len(call.speaker.levels)
        silent_from = await call.speaker.wait_for_silence(SILENT_FRAMES, after=cleared_at)
        assert silent_from - cleared_at < CLEARED_WITHIN_FRAMES, "the answer went on playing after barge-in"
        done = next(e for e in cut if of_response(story_id, "response.done")(e))["response"]
        assert done["status"] == "cancelled"
        assert done["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        assert [e["response_id"] for e in cut if e["type"] == "output_audio_buffer.cleared"] == [story_id]
        sent = next(e for e in cut if of_response(story_id, "response.output_audio_transcript.done")(e))
        item_id = sent["item_id"]
        assert cut[-1]["item_id"] == item_id and cut[-1]["audio_end_ms"] > 0

        # The story is cut at what was played, in the history and for the model.
        await call.events.send("conversation.item.retrieve", item_id=item_id)
        heard = (await call.events.wait_for("conversation.item.retrieved"))["item"]["content"][0]["transcript"]
        assert heard and len(heard) < len(sent["transcript"]) and LONG_REPLY.startswith(heard)
        stopped = await call.events.collect_until("output_audio_buffer.stopped", timeout=20)
        assert next(e for e in stopped if e["type"] == "response.done")["response"]["status"] == "completed"
        assert [m.content for m in llm_requests[-1].messages if m.role == "assistant"] == [
            "Paris is the capital of France.", heard]

        # DELETE ends the call and frees the unit.
        hung_up = await call.hang_up()
        assert hung_up.status_code == 204
        await wait_idle(server)
        await call.events.wait_closed(timeout=10)


async def test_a_call_the_client_closes_frees_its_unit(rtc: ModuleType, make_server: ServerFactory) -> None:
    server = make_server()
    async with rtc.webrtc_call(server.http_url) as call:
        await call.events.wait_for("session.created")
        assert await pool_states(server) == ["busy"]
    await wait_idle(server)  # no DELETE: the peer connection closed


async def test_a_call_says_it_cannot_be_resumed_and_takes_the_unit_of_a_detached_socket(
        rtc: ModuleType, make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, disconnect_grace_s=30.0)
    async with RealtimeTestClient.connect(server.ws_url) as dropped:
        await dropped.wait_for("session.created")
        dropped.abort()  # its session waits for a resume, holding the only unit
    async with rtc.webrtc_call(server.http_url) as call:  # evicts it
        created = await call.events.wait_for("session.created")
        capabilities = created["session"]["capabilities"]
        assert capabilities["supports_session_resume"] is False  # its events die with the data channel
        assert capabilities["input_modes"] == ["media_track"]
        assert "resume_token" not in created
        assert created["session_id"] == created["session"]["id"]
        await call.hang_up()
    await wait_idle(server)


async def test_a_call_that_never_connects_frees_its_unit(rtc: ModuleType, make_server: ServerFactory,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from speech_to_speech.realtime.webrtc import signalling as webrtc

    monkeypatch.setattr(webrtc, "CONNECT_TIMEOUT_S", 0.5)
    server = make_server()
    response = await _post_offer(server, await _offer(rtc))  # its peer is gone: ICE never completes
    assert response.status_code == 201
    assert await pool_states(server) == ["busy"]
    await wait_idle(server)
    async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
        assert (await http.delete(response.headers["location"])).status_code == 404  # already ended


async def test_the_multipart_form_opens_the_call_with_its_session(rtc: ModuleType, make_server: ServerFactory
                                                                   ) -> None:
    server = make_server()
    session = {"type": "realtime", "model": "gpt-realtime", "instructions": "Answer in French."}
    async with rtc.webrtc_call(server.http_url, session=session) as call:
        created = await call.events.wait_for("session.created")
        assert created["session"]["instructions"] == "Answer in French."
        await call.hang_up()
    offer = await _offer(rtc)
    async with httpx.AsyncClient(base_url=server.http_url, timeout=10) as http:
        bad = await http.post("/v1/realtime/calls", files={"sdp": (None, offer),
                                                           "session": (None, '{"type": "transcription"}')})
        assert bad.status_code == 400
        assert _json_error(bad)["code"] == "invalid_session_type"
    assert await pool_states(server) == ["idle"]


async def test_append_on_the_channel_is_rejected_for_the_transport(rtc: ModuleType, make_server: ServerFactory
                                                                   ) -> None:
    server = make_server()
    async with rtc.webrtc_call(server.http_url) as call:
        await call.events.wait_for("session.created")
        event_id = await call.events.send("input_audio_buffer.append", audio="AAAA")
        error = await call.events.wait_for(is_error_for(event_id))
        assert error["error"]["code"] == "invalid_event_for_transport"
        await call.hang_up()


async def test_output_audio_buffer_clear_silences_the_answer(rtc: ModuleType, make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[LONG_REPLY], **SLOW)
    async with rtc.webrtc_call(server.http_url) as call:
        call.microphone.say(spoken_turn(RATE))
        events = await call.events.collect_until("output_audio_buffer.started", timeout=20)
        story_id = _response_id(events)
        await call.speaker.wait_for_sound(frames=25)  # half a second of it: seconds more are queued by then
        await call.events.send("output_audio_buffer.clear")
        cleared = await call.events.collect_until("output_audio_buffer.cleared")
        at = len(call.speaker.levels)
        assert cleared[-1]["response_id"] == story_id
        done = next(e for e in cleared if e["type"] == "response.done")["response"]
        assert done["status_details"] == {"type": "cancelled", "reason": "client_cancelled"}
        silent_from = await call.speaker.wait_for_silence(SILENT_FRAMES, after=at)
        assert silent_from - at < CLEARED_WITHIN_FRAMES, "the answer went on playing after the clear"
        # Nothing plays any more: a clear now still answers, and never starts the buffer again.
        await call.events.send("output_audio_buffer.clear")
        again = await call.events.collect_until("output_audio_buffer.cleared")
        assert again[-1]["response_id"] == story_id
        assert "output_audio_buffer.started" not in types(await call.events.barrier())
        await call.hang_up()


async def test_barge_in_clears_an_answer_that_is_generated_but_still_playing(
        rtc: ModuleType, make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    # Generated at once, 20 s to play: the response is done long before the user interrupts.
    server = make_server(scripted_replies=[LONG_REPLY, "Stopped."], scripted_tts_ms_per_char=60.0)
    async with rtc.webrtc_call(server.http_url) as call:
        call.microphone.say(spoken_turn(RATE))
        events = await call.events.collect_until("output_audio_buffer.started", timeout=20)
        story_id = _response_id(events)
        assert next(e for e in events if e["type"] == "response.done")["response"]["status"] == "completed"
        await call.speaker.wait_for_sound(frames=25)
        call.microphone.say(spoken_turn(RATE))
        cut = await call.events.collect_until("conversation.item.truncated", timeout=20)
        at = len(call.speaker.levels)
        assert [e["response_id"] for e in cut if e["type"] == "output_audio_buffer.cleared"] == [story_id]
        assert "output_audio_buffer.stopped" not in types(cut)
        silent_from = await call.speaker.wait_for_silence(SILENT_FRAMES, after=at)
        assert silent_from - at < CLEARED_WITHIN_FRAMES, "the answer went on playing after barge-in"
        await call.events.collect_until("response.done", timeout=20)
        heard = next(m.content for m in llm_requests[-1].messages if m.role == "assistant")
        assert heard and len(heard) < len(LONG_REPLY) / 2 and LONG_REPLY.startswith(heard)
        await call.hang_up()


# ---------------------------------------------------------------- signalling errors


async def test_a_full_pool_answers_503_with_a_json_error(rtc: ModuleType, make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, release_timeout_s=0.2)
    offer = await _offer(rtc)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        response = await _post_offer(server, offer)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    error = _json_error(response)
    assert error["code"] == "session_limit_reached"
    assert "busy" in error["message"]


async def test_bad_offers_are_400_and_claim_nothing(rtc: ModuleType, make_server: ServerFactory) -> None:
    server = make_server()
    not_sdp = await _post_offer(server, "hello")
    assert not_sdp.status_code == 400
    assert _json_error(not_sdp)["code"] == "invalid_sdp"
    # Looks like SDP, but aiortc cannot answer it (no ICE credentials, no fingerprint): the unit goes back.
    broken = await _post_offer(server, "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"
                                       "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\n"
                                       "a=rtpmap:111 opus/48000/2\r\n")
    assert broken.status_code == 400
    assert _json_error(broken)["code"] == "invalid_sdp"
    wrong_type = await _post_offer(server, await _offer(rtc), content_type="application/json")
    assert wrong_type.status_code == 415
    await wait_idle(server)


async def test_deleting_an_unknown_call_is_404(make_server: ServerFactory) -> None:
    server = make_server()
    async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
        response = await http.delete("/v1/realtime/calls/rtc_nosuchcall")
    assert response.status_code == 404
    assert _json_error(response)["code"] == "call_not_found"


async def test_without_aiortc_a_call_names_the_extra_and_the_rest_works(make_server: ServerFactory,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    server = make_server()
    monkeypatch.setitem(sys.modules, "aiortc", None)  # import aiortc now raises ImportError
    response = await _post_offer(server, "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n")
    assert response.status_code == 501
    assert "pip install 'speech-to-speech[webrtc]'" in _json_error(response)["message"]
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
    await wait_idle(server)  # the closed session's unit drains in the background


# ---------------------------------------------------------------- ICE servers


def test_ice_servers_come_from_the_environment() -> None:
    assert ice_servers_from_env({}) == []
    servers = '[{"urls": "stun:stun.example.com:3478"}, {"urls": ["turn:t.example.com"], "username": "u", ' \
              '"credential": "c"}]'
    assert ice_servers_from_env({ICE_SERVERS_ENV: servers}) == [
        {"urls": "stun:stun.example.com:3478"},
        {"urls": ["turn:t.example.com"], "username": "u", "credential": "c"},
    ]
    for bad, says in [("not json", "not valid JSON"), ('{"urls": "stun:x"}', "JSON list"),
                      ('[{"url": "stun:x"}]', "urls"), ('[{"urls": "stun:x", "password": "p"}]', "unknown keys")]:
        with pytest.raises(ValueError, match=says) as raised:
            ice_servers_from_env({ICE_SERVERS_ENV: bad})
        assert ICE_SERVERS_ENV in str(raised.value)


def test_a_bad_ice_server_list_stops_the_server_at_startup(make_server: ServerFactory,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ICE_SERVERS_ENV, "[{broken")
    with pytest.raises(ValueError, match=f"{ICE_SERVERS_ENV} is not valid JSON"):
        make_server()


async def test_visemes_go_on_the_data_channel_with_their_place_in_the_item(rtc: ModuleType,
                                                                          make_server: ServerFactory) -> None:
    from speech_to_speech.protocol import VISEMES_EXTENSION

    server = make_server(enable_visemes=True, scripted_replies=["Paris is the capital of France."])
    async with rtc.webrtc_call(server.http_url) as call:
        await call.events.wait_for("session.created")
        await call.events.update_session({"extensions": [VISEMES_EXTENSION]})
        await call.events.send("response.create")
        events = await call.events.collect_until("response.done")
        await call.hang_up()

    visemes = [e for e in events if e["type"] == VISEMES_EXTENSION]
    assert visemes and "response.output_audio.delta" not in types(events)  # the audio went on RTP
    # No delta to stand beside: each event says where its chunk sits in the item's audio, back to back.
    position = 0
    for event in visemes:
        assert event["item_id"] == visemes[0]["item_id"] and event["response_id"] == _response_id(events)
        assert abs(event["audio_start_ms"] - position) <= 1
        position += sum(c["duration_ms"] for c in event["visemes"])


async def test_listen_only_judges_speech_over_an_answer_that_is_done_but_still_playing(
        rtc: ModuleType, make_server: ServerFactory) -> None:
    """The overlap policy (docs/sessions.md): the assistant still speaks while its audio plays on the track."""
    server = make_server(scripted_transcripts=["Tell me a long story.", "Mm-hmm.", "Stop there, please."],
                         scripted_replies=[LONG_REPLY, "Stopped."], scripted_tts_ms_per_char=60.0)
    async with rtc.webrtc_call(server.http_url, session={"overlap_policy": "listen_only"}) as call:
        call.microphone.say(spoken_turn(RATE))
        events = await call.events.collect_until("output_audio_buffer.started", timeout=20)
        story_id = _response_id(events)
        assert next(e for e in events if e["type"] == "response.done")["response"]["status"] == "completed"
        await call.speaker.wait_for_sound(frames=25)
        # A backchannel: acknowledged; the story plays on and nothing answers it.
        call.microphone.say(spoken_turn(RATE, speech_s=0.3))
        heard = await call.events.collect_until("conversation.item.input_audio_transcription.completed",
                                                timeout=20)
        [ack] = [e for e in heard if e["type"] == "overlap.decision"]
        assert (ack["action"], ack["reason"]) == ("acknowledge", "short_backchannel")
        assert ack["metadata"]["response_id"] is None  # only the story's audio was still going
        assert not {"output_audio_buffer.cleared", "output_audio_buffer.stopped", "response.created"} & set(
            types(heard))
        # A long overlap: the story is cleared from the track while the user still speaks, then answered.
        call.microphone.say(spoken_turn(RATE, speech_s=2.0))
        cut = await call.events.collect_until("output_audio_buffer.cleared", timeout=20)
        [barge] = [e for e in cut if e["type"] == "overlap.decision"]
        assert (barge["action"], barge["reason"]) == ("barge_in", "long_overlap_speech")
        assert cut[-1]["response_id"] == story_id
        assert "input_audio_buffer.speech_stopped" not in types(cut)
        answer = await call.events.collect_until("response.done", timeout=20)
        assert answer[-1]["response"]["output"][0]["content"][0]["transcript"] == "Stopped."
        await call.hang_up()
