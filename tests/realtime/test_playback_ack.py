"""Playback truth over the wire: playback.ack, ack-only history, text marks, truncate, retrieve, delete.

A real server with scripted handlers; what the LLM was asked is read from the
scripted LLM's requests (the ``llm_requests`` fixture). The scripted TTS makes
10 ms of audio per character it says, clause by clause, and says numbers in
words, so a clause's audio is not in proportion to its characters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.realtime.conversation.playback import heard_text
from speech_to_speech.testing.client_audio import decode_audio
from speech_to_speech.testing.event_matchers import is_error_for, types
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

SECOND = 24000
LONG_REPLY = ("One two three four five six, seven eight nine ten eleven twelve. Thirteen fourteen fifteen "
              "sixteen seventeen eighteen nineteen twenty. Twenty one twenty two twenty three twenty four "
              "twenty five twenty six twenty seven twenty eight twenty nine thirty.")
NUMBER_REPLY = "It is 1234567 degrees. Cold and windy outside today, so please stay home."


@dataclass
class Answer:
    """One response as a client saw it."""

    events: list[dict[str, Any]]

    @property
    def done(self) -> dict[str, Any]:
        return next(e for e in self.events if e["type"] == "response.done")["response"]

    @property
    def response_id(self) -> str:
        return str(self.done["id"])

    @property
    def item_id(self) -> str:
        return str(self.done["output"][0]["id"])

    @property
    def transcript(self) -> str:
        return "".join(e["delta"] for e in self.events if e["type"] == "response.output_audio_transcript.delta")

    @property
    def deltas(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == "response.output_audio.delta"]

    @property
    def marks(self) -> list[dict[str, int]]:
        return [mark for e in self.deltas for mark in e["metadata"]["audio_text_marks"]]

    @property
    def audio_ms(self) -> int:
        return sum(len(decode_audio(e["delta"])) for e in self.deltas) * 1000 // SECOND

    @property
    def playback(self) -> dict[str, int]:
        return dict(json.loads(self.done["metadata"]["playback"]))


async def _answer(client: RealtimeTestClient) -> Answer:
    await client.send("response.create")
    return Answer(await client.response_cycle())


async def _ack(client: RealtimeTestClient, **fields: Any) -> dict[str, Any]:
    await client.send("playback.ack", **fields)
    return await client.wait_for("playback.acknowledged")


def _assistant_said(request: GenerateResponseRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "assistant"]


async def _ack_only(client: RealtimeTestClient) -> None:
    updated = await client.update_session({"type": "realtime", "playback_commit_policy": "ack_only"})
    assert updated["session"]["playback_commit_policy"] == "ack_only"


# ---------------------------------------------------------------- the history the LLM sees


async def test_after_an_interruption_an_ack_only_session_tells_the_llm_only_the_heard_prefix(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=[LONG_REPLY, "Sure."], scripted_token_delay_ms=40)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        created = await client.wait_for("session.created")
        assert created["session"]["playback_commit_policy"] == "commit_all_on_done"
        await _ack_only(client)
        await client.send("response.create")
        # The first clause is voiced whole once the second one's audio starts: its mark comes then.
        seen = await client.collect_until(lambda e: e["type"] == "response.output_audio.delta"
                                          and e["metadata"]["audio_text_marks"])
        mark = seen[-1]["metadata"]["audio_text_marks"][0]
        await client.send("response.cancel")  # the user barged in right there
        answer = Answer(seen + await client.response_cycle())
        assert answer.done["status"] == "cancelled"
        heard = answer.transcript[: mark["text_chars"]].rstrip()
        assert heard and heard != answer.transcript.rstrip()

        acked = await _ack(client, response_id=answer.response_id, played_ms=mark["audio_end_ms"], truncate=True)
        assert acked["event"]["played_ms"] == acked["event"]["committed_ms"] == mark["audio_end_ms"]
        assert acked["event"]["session_id"] == created["session"]["id"]
        await client.send("conversation.item.retrieve", item_id=answer.item_id)
        retrieved = await client.wait_for("conversation.item.retrieved")
        assert retrieved["item"]["content"][0]["transcript"] == heard

        await _answer(client)
    assert _assistant_said(llm_requests[-1]) == [heard]


async def test_by_default_the_whole_answer_enters_the_history_when_it_is_done(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=[LONG_REPLY, "Sure."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        answer = await _answer(client)
        figures = answer.playback
        assert abs(figures["generated_ms"] - answer.audio_ms) <= 1
        assert figures["committed_ms"] == figures["generated_ms"] == figures["sent_ms"]
        assert figures["played_ms"] == 0  # this client never said what it played
        await _answer(client)
    assert _assistant_said(llm_requests[-1]) == [LONG_REPLY]


async def test_an_ack_only_answer_enters_the_history_as_far_as_it_was_committed(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=[LONG_REPLY, "One.", "Two.", "Three."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await _ack_only(client)
        answer = await _answer(client)
        assert answer.playback["committed_ms"] == 0

        await _answer(client)  # nothing acknowledged: the answer is not in the history at all
        assert _assistant_said(llm_requests[-1]) == []

        first = answer.marks[0]
        acked = await _ack(client, response_id=answer.response_id, item_id=answer.item_id,
                           played_ms=first["audio_end_ms"] + 50, committed_ms=first["audio_end_ms"])
        assert (acked["response_id"], acked["item_id"]) == (answer.response_id, answer.item_id)
        body = acked["event"]
        assert body["type"] == "playback.acknowledged" and body["item_id"] == answer.item_id
        assert (body["played_ms"], body["committed_ms"], body["truncate"]) == (
            first["audio_end_ms"] + 50, first["audio_end_ms"], False)
        assert body["playback"]["played_ms"] == first["audio_end_ms"] + 50
        assert body["history_committed"] is False
        await _answer(client)
        assert _assistant_said(llm_requests[-1])[0] == answer.transcript[: first["text_chars"]].rstrip()

        everything = await _ack(client, response_id=answer.response_id, played_ms=answer.audio_ms)
        assert everything["event"]["history_committed"] is True
        await _answer(client)
        assert _assistant_said(llm_requests[-1])[0] == LONG_REPLY
        # Acks do not cut the item: retrieve still gives what was generated.
        await client.send("conversation.item.retrieve", item_id=answer.item_id)
        assert (await client.wait_for("conversation.item.retrieved"))["item"]["content"][0]["transcript"] == (
            LONG_REPLY)


async def test_a_deleted_answer_leaves_the_history(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=["Forget this answer.", "Fine."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        answer = await _answer(client)
        await client.send("conversation.item.delete", item_id=answer.item_id)
        assert (await client.wait_for("conversation.item.deleted"))["item_id"] == answer.item_id
        stale = await client.send("playback.ack", response_id=answer.response_id, item_id=answer.item_id,
                                  played_ms=10)
        assert (await client.wait_for(is_error_for(stale)))["error"]["code"] == "conversation_item_not_found"
        await _answer(client)
    assert _assistant_said(llm_requests[-1]) == []


# ---------------------------------------------------------------- text marks


async def test_audio_deltas_say_how_long_the_item_is_and_which_text_its_audio_has_voiced(
        make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[LONG_REPLY])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        answer = await _answer(client)
    samples = 0
    for delta in answer.deltas:
        samples += len(decode_audio(delta["delta"]))
        assert delta["metadata"]["audio_duration_ms"] == samples * 1000 // SECOND
        assert delta["metadata"]["playback"]["generated_ms"] == samples * 1000 // SECOND
    marks = answer.marks
    assert len(marks) >= 2  # one per clause boundary
    assert [m["text_chars"] for m in marks] == sorted(m["text_chars"] for m in marks)
    assert [m["audio_end_ms"] for m in marks] == sorted(m["audio_end_ms"] for m in marks)
    for mark in marks:  # each at a clause's end: after its closing space, with that much audio made
        assert answer.transcript[mark["text_chars"] - 1].isspace()
        assert mark["audio_end_ms"] <= answer.audio_ms


async def test_truncate_cuts_the_transcript_at_the_clause_the_audio_ended_not_in_proportion(
        make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[NUMBER_REPLY], first_chunk_words=0)  # speech starts on the sentence
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        answer = await _answer(client)
        first = answer.marks[0]  # "It is 1234567 degrees. ": the number takes long to say
        await client.send("conversation.item.truncate", item_id=answer.item_id, content_index=0,
                          audio_end_ms=first["audio_end_ms"])
        assert (await client.wait_for("conversation.item.truncated"))["audio_end_ms"] == first["audio_end_ms"]
        await client.send("conversation.item.retrieve", item_id=answer.item_id)
        cut = (await client.wait_for("conversation.item.retrieved"))["item"]["content"][0]["transcript"]
    assert cut == "It is 1234567 degrees."
    proportional = heard_text(NUMBER_REPLY, first["audio_end_ms"] * SECOND // 1000, answer.audio_ms * 24)
    assert proportional != cut  # the old rule would have put words the user never heard in the history


# ---------------------------------------------------------------- bad acks


async def test_bad_acks_are_refused_with_the_ack_s_event_id_and_the_session_goes_on(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_replies=[LONG_REPLY, "Still here."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await _ack_only(client)
        answer = await _answer(client)
        rid, item = answer.response_id, answer.item_id
        await _ack(client, response_id=rid, played_ms=300)
        bad: list[tuple[dict[str, Any], str, str]] = [
            ({"response_id": "resp_nope", "played_ms": 0}, "response_not_found", "response_id"),
            ({"response_id": rid, "item_id": "item_nope", "played_ms": 0}, "conversation_item_not_found",
             "item_id"),
            ({"response_id": rid, "played_ms": -5}, "invalid_value", "played_ms"),
            ({"response_id": rid, "played_ms": 400.5}, "invalid_value", "played_ms"),
            ({"response_id": rid, "played_ms": "400"}, "invalid_value", "played_ms"),
            ({"response_id": rid, "played_ms": answer.audio_ms + 100}, "invalid_value", "played_ms"),
            ({"response_id": rid, "played_ms": 400, "committed_ms": 500}, "invalid_value", "committed_ms"),
            ({"response_id": rid, "played_ms": 200}, "invalid_value", "played_ms"),  # backwards
            ({"response_id": rid, "played_ms": 400, "truncate": 1}, "invalid_value", "truncate"),
            ({"played_ms": 400}, "invalid_value", "response_id"),
        ]
        for fields, code, param in bad:
            event_id = await client.send("playback.ack", **fields)
            error = (await client.wait_for(is_error_for(event_id)))["error"]
            assert (error["code"], error["param"], error["type"]) == (code, param, "invalid_request_error"), fields
        assert "playback.acknowledged" not in types(await client.barrier())

        refused = await client.send("session.update", session={"playback_commit_policy": "sometimes"})
        error = (await client.wait_for(is_error_for(refused)))["error"]
        assert error["param"] == "session.playback_commit_policy"

        acked = await _ack(client, response_id=rid, item_id=item, played_ms=400)  # still counted from 300
        assert acked["event"]["played_ms"] == 400
        assert (await _answer(client)).done["status"] == "completed"
    said = _assistant_said(llm_requests[-1])
    assert len(said) == 1 and LONG_REPLY.startswith(said[0]) and len(said[0]) < len(LONG_REPLY)
