"""Text marks and acknowledged playback, on the ledger itself (no server): where a transcript is cut.

The wire tests (test_playback_ack.py) show the same through a real server; here
hypothesis drives the ledger with any sequence of clauses, acks and
truncations, which would take far too long over a socket.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.playback import ACK_ONLY, COMMIT_ALL_ON_DONE, Playback
from speech_to_speech.realtime.conversation.playback_ack import acknowledge
from speech_to_speech.realtime.conversation.text_marks import TextMarks, heard_text, whole_words
from speech_to_speech.realtime.wire.errors import RealtimeError

MS = 24  # samples per ms at 24 kHz


def test_without_marks_the_cut_is_proportional_back_to_a_whole_word() -> None:
    assert heard_text("one two three four", None, 50, 100) == "one two"
    assert heard_text("one two three four", None, 100, 100) == "one two three four"
    assert heard_text("one two three four", None, 0, 100) == ""


def test_a_clause_boundary_cuts_exactly_where_the_clause_ends_whatever_its_length_in_chars() -> None:
    # A short text that is long to say (a number read out) followed by a long quick one.
    marks = TextMarks()
    first, full = "It was 1999999. ", "It was 1999999. Then we all went home together."
    marks.clause(0, len(first), 0)
    marks.clause(len(first), len(full), 3000 * MS)  # the first clause took 3 s
    marks.close(4000 * MS)  # the second only 1 s
    assert heard_text(full, marks, 3000 * MS, 4000 * MS) == first.rstrip()
    assert heard_text(full, None, 3000 * MS, 4000 * MS) != first.rstrip()  # the proportion overshoots
    assert heard_text(full, marks, 2500 * MS, 4000 * MS) == "It was"  # the number not heard whole
    assert heard_text(full, marks, 4000 * MS, 4000 * MS) == full


def test_a_clause_still_being_voiced_is_estimated_from_the_speaking_rate_so_far() -> None:
    marks = TextMarks()
    marks.clause(0, 10, 0)
    marks.clause(10, 30, 1000 * MS)  # 10 chars took 1 s: the next 20 should take about 2 s
    # Cut off after 1.5 s: a quarter of the second clause, not all of it.
    assert marks.position(1500 * MS, 1500 * MS, 30) == 15
    # Heard everything made so far of an unfinished clause: still not its whole text.
    assert marks.position(1500 * MS, 1500 * MS, 30) < 30


def test_new_marks_go_out_once() -> None:
    marks = TextMarks()
    marks.clause(0, 5, 0)
    assert marks.unsent() == []  # the first clause's end is not known yet
    marks.clause(5, 9, 480)
    marks.clause(9, 12, 480)  # a clause with no audio (say, an emoji)
    assert [(m.text_chars, m.audio_end) for m in marks.unsent()] == [(5, 480), (9, 480)]
    assert marks.unsent() == []


def test_whole_words_never_keeps_a_word_that_was_only_partly_heard() -> None:
    assert whole_words("hello there friend", 8) == "hello"
    assert whole_words("hello there friend", 11) == "hello there"
    assert whole_words("hello there friend", 12) == "hello there"
    assert whole_words("hello", 4) == ""


# ---------------------------------------------------------------- the ledger under acks (hypothesis)

WORDS = st.lists(st.sampled_from(["yes", "the", "weather", "is", "1999", "sunny,", "today.", "ok"]),
                 min_size=1, max_size=4)
CLAUSES = st.lists(st.tuples(WORDS, st.integers(min_value=0, max_value=120)), min_size=1, max_size=5)


class Answer:
    """One spoken assistant answer in a ledger, as the service feeds it: clause text, then its audio."""

    def __init__(self, clauses: list[tuple[list[str], int]], policy: str, status: str = "completed") -> None:
        self.conversation = Conversation()
        self.playback = Playback(self.conversation, lambda event: None, policy=lambda: policy)
        self.item: dict[str, Any] = {"id": "item_a", "object": "realtime.item", "type": "message",
                                     "role": "assistant", "status": "in_progress",
                                     "content": [{"type": "output_audio", "transcript": ""}]}
        self.conversation.add(self.item)
        self.ends: list[tuple[int, int]] = []  # (chars, ms) where each clause's text and audio end
        transcript, ms = "", 0
        for index, (words, clause_ms) in enumerate(clauses):
            transcript += " ".join(words) + (" " if index < len(clauses) - 1 else "")  # as an LLM writes
            self.item["content"][0]["transcript"] = transcript
            self.playback.spoken_text("resp_a", "item_a", len(transcript))
            self.playback.produced("resp_a", "item_a", np.zeros(clause_ms * MS, np.int16))
            ms += clause_ms
            self.ends.append((len(transcript), ms))
        self.full = transcript
        # A cancelled answer's last clause stopped short: it was never voiced to its end.
        self.voiced_ends = self.ends if status != "cancelled" else self.ends[:-1]
        self.playback.settle("resp_a", status)

    def ack(self, **fields: Any) -> dict[str, Any]:
        return acknowledge(self.playback, {"response_id": "resp_a", **fields}, active_response=None,
                           session_id="sess_1")

    def history(self) -> str:
        said = self.playback.history_text
        assistant = [m.content for m in self.conversation.history(said=said) if m.role == "assistant"]
        return assistant[0] if assistant else ""

    @property
    def transcript(self) -> str:
        return str(self.item["content"][0]["transcript"])

    def clause_end_after(self, ms: int) -> int:
        """Chars up to the end of the clause the audio at ``ms`` is in: no cut may pass it."""
        return next((chars for chars, end in self.ends if end > ms), len(self.full))

    def chars_voiced_by(self, ms: int) -> int:
        """Chars of the clauses whose audio ended by ``ms``: a cut there keeps at least their whole words."""
        return max((chars for chars, end in self.voiced_ends if end <= ms), default=0)


def _is_word_prefix(text: str, of: str) -> bool:
    return of.startswith(text) and (text == "" or len(text) == len(of) or of[len(text)].isspace())


ACKS = st.lists(st.tuples(st.integers(min_value=0, max_value=700), st.integers(min_value=0, max_value=700),
                          st.booleans()), max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clauses=CLAUSES, acks=ACKS, status=st.sampled_from(["completed", "cancelled"]))
def test_ack_only_history_is_always_a_whole_word_prefix_never_past_what_was_committed(
        clauses: list[tuple[list[str], int]], acks: list[tuple[int, int, bool]], status: str) -> None:
    answer = Answer(clauses, ACK_ONLY, status)
    assert answer.history() == ""  # nothing acknowledged: nothing said
    previous = ""
    for played, committed, truncate in acks:
        before = answer.transcript
        try:
            answer.ack(played_ms=played, committed_ms=committed, truncate=truncate)
        except RealtimeError:
            assert answer.transcript == before  # a refused ack changes nothing
            continue
        said = answer.history()
        assert _is_word_prefix(said, answer.full) and _is_word_prefix(said, answer.transcript)
        assert len(said) <= answer.clause_end_after(committed)
        if committed > 0:  # and everything whose audio had ended by then is in, in whole words
            voiced = min(answer.chars_voiced_by(committed), len(answer.transcript))
            assert len(said) >= len(whole_words(answer.full, voiced))
        if not truncate:
            assert said.startswith(previous)  # acks only move forward
        assert _is_word_prefix(answer.transcript, answer.full)
        previous = said


@given(clauses=CLAUSES)
@settings(max_examples=50, deadline=None)
def test_commit_all_on_done_puts_the_whole_answer_in_the_history_without_any_ack(
        clauses: list[tuple[list[str], int]]) -> None:
    answer = Answer(clauses, COMMIT_ALL_ON_DONE)
    assert answer.history() == answer.full
    acked = answer.ack(played_ms=0)
    assert acked["event"]["history_committed"] is True
    assert acked["event"]["playback"]["committed_ms"] == acked["event"]["playback"]["generated_ms"]


def test_an_ack_of_everything_commits_the_whole_answer_even_when_ms_were_rounded_down() -> None:
    answer = Answer([(["hello", "there."], 101), (["how", "are", "you?"], 77)], ACK_ONLY)
    total_ms = answer.ends[-1][1]
    acked = answer.ack(played_ms=total_ms - 1)  # a client that floors each chunk's duration
    assert answer.history() == answer.full
    assert acked["event"]["history_committed"] is True
    assert acked["event"]["playback"] == {"generated_ms": total_ms, "sent_ms": total_ms,
                                          "played_ms": total_ms - 1, "committed_ms": total_ms - 1}


def test_a_cancelled_answer_is_cut_short_of_its_unfinished_clause() -> None:
    answer = Answer([(["first", "part,"], 200), (["and", "then", "a", "rather", "long", "ending."], 100)],
                    ACK_ONLY, status="cancelled")  # the second clause's audio stopped after 100 ms
    answer.ack(played_ms=300, truncate=True)
    assert answer.transcript.startswith("first part, and")
    assert answer.transcript != answer.full  # "long ending." was never voiced


@pytest.mark.parametrize(("fields", "param"), [
    ({"played_ms": -1}, "played_ms"),
    ({"played_ms": 1.5}, "played_ms"),
    ({"played_ms": True}, "played_ms"),
    ({}, "played_ms"),
    ({"played_ms": 10, "committed_ms": 20}, "committed_ms"),
    ({"played_ms": 10_000}, "played_ms"),
    ({"played_ms": 10, "truncate": "yes"}, "truncate"),
    ({"played_ms": 10, "item_id": "item_other"}, "item_id"),
    ({"played_ms": 10, "response_id": "resp_other"}, "response_id"),
    ({"played_ms": 10, "response_id": 7}, "response_id"),
])
def test_a_bad_ack_is_refused_naming_the_field(fields: dict[str, Any], param: str) -> None:
    answer = Answer([(["hello", "there."], 500)], ACK_ONLY)
    with pytest.raises(RealtimeError) as refused:
        answer.ack(**fields)
    assert refused.value.param == param


def test_optional_fields_sent_as_null_take_their_defaults() -> None:
    answer = Answer([(["hello", "there."], 500)], ACK_ONLY)
    acked = answer.ack(played_ms=500, item_id=None, committed_ms=None, truncate=None)["event"]
    assert (acked["committed_ms"], acked["truncate"], acked["item_id"]) == (500, False, "item_a")
    assert answer.history() == "hello there."


def test_positions_move_back_only_with_truncate() -> None:
    answer = Answer([(["one", "two", "three."], 300), (["four", "five."], 300)], ACK_ONLY)
    answer.ack(played_ms=400)
    assert answer.history() == "one two three."
    with pytest.raises(RealtimeError) as refused:
        answer.ack(played_ms=200)
    assert refused.value.param == "played_ms"
    answer.ack(played_ms=300, truncate=True)
    assert answer.transcript == "one two three."
    with pytest.raises(RealtimeError):
        answer.ack(played_ms=400)  # the audio now ends at 300 ms


def test_a_webrtc_clear_cuts_the_transcript_at_the_clause_the_track_had_played_to() -> None:
    from .test_playback import FakeTrack

    conversation, track, events = Conversation(), FakeTrack(), []
    playback = Playback(conversation, events.append, track)
    first, second = "It is 1234567 degrees. ", "Cold and windy outside today."
    item = {"id": "item_a", "object": "realtime.item", "type": "message", "role": "assistant",
            "status": "in_progress", "content": [{"type": "output_audio", "transcript": first}]}
    conversation.add(item)
    playback.spoken_text("resp_a", "item_a", len(first))
    playback.produced("resp_a", "item_a", np.zeros(2000 * MS, np.int16))  # the number takes 2 s to say
    item["content"][0]["transcript"] = first + second
    playback.spoken_text("resp_a", "item_a", len(first + second))
    playback.produced("resp_a", "item_a", np.zeros(500 * MS, np.int16))
    track.advance(2000 * MS)  # played up to the end of the first clause, then the user barged in
    playback.clear()
    assert item["content"][0]["transcript"] == first.rstrip()  # by proportion it would keep "Cold and windy"
    assert events[-1] == {"type": "conversation.item.truncated", "item_id": "item_a", "content_index": 0,
                          "audio_end_ms": 2000}


def test_over_webrtc_ack_only_commits_what_the_track_played_without_any_ack() -> None:
    from .test_playback import FakeTrack

    conversation, track = Conversation(), FakeTrack()
    playback = Playback(conversation, lambda event: None, track, policy=lambda: ACK_ONLY)
    first, second = "It is sunny. ", "Cold tomorrow."
    item = {"id": "item_a", "object": "realtime.item", "type": "message", "role": "assistant",
            "status": "in_progress", "content": [{"type": "output_audio", "transcript": first}]}
    conversation.add(item)
    playback.spoken_text("resp_a", "item_a", len(first))
    playback.produced("resp_a", "item_a", np.zeros(1000 * MS, np.int16))
    item["content"][0]["transcript"] = first + second
    playback.spoken_text("resp_a", "item_a", len(first + second))
    playback.produced("resp_a", "item_a", np.zeros(1000 * MS, np.int16))
    playback.settle("resp_a", "completed")

    def history() -> str:
        return "".join(m.content for m in conversation.history(said=playback.history_text)
                       if m.role == "assistant")

    assert history() == ""  # generated and queued, nothing played yet: nothing was heard
    track.advance(1000 * MS)
    assert history() == first.rstrip()
    track.advance(1000 * MS)
    assert history() == first + second
    assert playback.figures("resp_a")["committed_ms"] == 2000
