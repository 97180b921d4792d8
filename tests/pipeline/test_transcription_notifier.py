"""TranscriptionNotifier: cumulative STT hypotheses -> append-only transcription events."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import pytest

from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.messages.control import PipelineEnd, SessionEnd
from speech_to_speech.pipeline.messages.transcription import (
    Transcript,
    TranscriptionCompleted,
    TranscriptionDelta,
    TranscriptionSnapshot,
)
from speech_to_speech.pipeline.session_config import ConfigHolder
from speech_to_speech.pipeline.transcription_notifier import TranscriptionNotifier
from speech_to_speech.testing.engine import collect


class Notifier:
    def __init__(self) -> None:
        self.queue_in: queue.Queue[Any] = queue.Queue()
        self.queue_out: queue.Queue[Any] = queue.Queue()
        context = HandlerContext(CancelScope(), ConfigHolder())
        self.handler = TranscriptionNotifier(context, self.queue_in, self.queue_out)
        self.handler.start("test-notifier")

    def hypotheses(self, *texts: str, item_id: str = "item_1") -> list[str]:
        """Feed partial hypotheses; the deltas they released, one entry per hypothesis."""
        released = []
        for text in texts:
            self.queue_in.put(Transcript(text, final=False, item_id=item_id))
            items = collect(self.queue_out, TranscriptionSnapshot)
            assert items[-1] == TranscriptionSnapshot(item_id, text)
            released.append("".join(i.delta for i in items if isinstance(i, TranscriptionDelta)))
        return released

    def final(self, text: str, item_id: str = "item_1") -> tuple[str, TranscriptionCompleted]:
        self.queue_in.put(Transcript(text, final=True, item_id=item_id, language="en", audio_seconds=1.5))
        items = collect(self.queue_out, TranscriptionCompleted)
        completed = items[-1]
        return "".join(i.delta for i in items if isinstance(i, TranscriptionDelta)), completed


@pytest.fixture
def notifier() -> Iterator[Notifier]:
    running = Notifier()
    yield running
    running.queue_in.put(PipelineEnd())


def test_a_word_is_sent_once_a_later_hypothesis_confirms_it(notifier: Notifier) -> None:
    released = notifier.hypotheses("what", "what is", "what is the", "what is the capital")
    assert released == ["", "what", " is", " the"]


def test_a_revision_of_sent_words_is_withheld_then_resumes(notifier: Notifier) -> None:
    assert notifier.hypotheses("I want", "I want to", "I want to go") == ["", "I want", " to"]
    # The model changes its mind about a word already on the wire: nothing can be retracted.
    assert notifier.hypotheses("I won't to go", "I won't to go home") == ["", ""]
    # Back in agreement with what was sent: new words flow again once confirmed twice.
    assert notifier.hypotheses("I want to go home", "I want to go home now") == ["", " go home"]


def test_an_unconfirmed_change_of_unsent_words_sends_nothing(notifier: Notifier) -> None:
    assert notifier.hypotheses("the cat", "the hat sat", "the hat sat down") == ["", "the", " hat sat"]


def test_the_final_transcript_sends_the_rest_and_is_authoritative(notifier: Notifier) -> None:
    notifier.hypotheses("hello", "hello world", "hello world how")
    rest, completed = notifier.final("Hello world, how are you?")
    # Words compare without case and edge punctuation, so the final only adds the new tail.
    assert rest == " how are you?"
    assert completed.transcript == "Hello world, how are you?"
    assert (completed.item_id, completed.language, completed.audio_seconds) == ("item_1", "en", 1.5)


def test_a_final_that_contradicts_sent_words_sends_no_delta(notifier: Notifier) -> None:
    notifier.hypotheses("good morning", "good morning to")
    rest, completed = notifier.final("Could more new things")
    assert rest == ""
    assert completed.transcript == "Could more new things"


def test_a_final_without_partials_is_one_delta(notifier: Notifier) -> None:
    rest, completed = notifier.final("Just one shot.")
    assert rest == "Just one shot."
    assert completed.transcript == "Just one shot."


def test_items_are_tracked_apart_and_forgotten_when_completed(notifier: Notifier) -> None:
    assert notifier.hypotheses("one two", "one two three", item_id="a") == ["", "one two"]
    assert notifier.hypotheses("four five", "four five six", item_id="b") == ["", "four five"]
    notifier.final("one two three", item_id="a")
    # A new turn with the same id starts from nothing.
    assert notifier.hypotheses("seven", "seven eight", item_id="a") == ["", "seven"]


def test_session_end_forgets_partial_state(notifier: Notifier) -> None:
    notifier.hypotheses("alpha beta", "alpha beta gamma")
    notifier.queue_in.put(SessionEnd(7))
    assert collect(notifier.queue_out, SessionEnd) == [SessionEnd(7)]
    rest, _ = notifier.final("delta epsilon")
    assert rest == "delta epsilon"


def test_how_near_a_hum_the_words_were_goes_on_with_them(notifier: Notifier) -> None:
    """The judge of speech over the answer weighs the hum gap of every pass (turns/listener_words.py)."""
    notifier.queue_in.put(Transcript("No.", final=False, item_id="item_2", avg_logprob=-0.6, hum_gap=2.5))
    snapshot = collect(notifier.queue_out, TranscriptionSnapshot)[-1]
    notifier.queue_in.put(Transcript("No.", final=True, item_id="item_2", avg_logprob=-0.6, hum_gap=3.5))
    completed = collect(notifier.queue_out, TranscriptionCompleted)[-1]
    assert (snapshot.hum_gap, completed.hum_gap) == (2.5, 3.5)
