"""The turn controller's stories: one pause after another, fed in audio milliseconds, no VAD around it.

Each test grows the silence chunk by chunk, as the VAD would, and hands the
controller the verdict, the words and the reply's readiness at chosen moments.
"""

from __future__ import annotations

import pytest

from speech_to_speech.pipeline.messages.turn_taking import TurnVerdict
from speech_to_speech.turns.controller import NOTHING, Answer, TurnController, TurnRules
from speech_to_speech.turns.rules import EAGERNESS, SENTENCE_PAUSE_MS

CHUNK_MS = 32
PAUSE_MS, FINISHED_PAUSE_MS, SILENCE_MS, MAX_SILENCE_MS = 192, 320, 480, 1920
SPECULATE_AT_MS = 64
TAKE_BACK_MS = 600
WORDS = "Well, let me think."


def rules(eagerness: str = "auto", judges: bool = True, take_back_ms: int = TAKE_BACK_MS) -> TurnRules:
    return TurnRules(judges=judges, silence_ms=SILENCE_MS, turn_pause_ms=PAUSE_MS,
                     finished_pause_ms=FINISHED_PAUSE_MS, max_turn_silence_ms=MAX_SILENCE_MS,
                     level=EAGERNESS[eagerness], take_back_ms=take_back_ms)


class Story:
    """One turn's controller, and the silence the VAD has measured so far."""

    def __init__(self, eagerness: str = "auto", judges: bool = True, take_back_ms: int = TAKE_BACK_MS) -> None:
        self.turns = TurnController()
        self.rules = rules(eagerness, judges, take_back_ms)
        self.silent_ms = 0
        self.asked: list[int] = []  # the pauses sent to the detector

    def silence(self, ms: int) -> list[tuple[int, Answer]]:
        """``ms`` more of silence; the answers that were not nothing, with the silence they came at.

        A speculative utterance is cut at 64 ms, and the detector asked with it, as the VAD does."""
        answers = []
        for _ in range(ms // CHUNK_MS):
            self.silent_ms += CHUNK_MS
            answer = self.turns.silence(self.silent_ms, self.rules, float(self.silent_ms), started=True)
            if answer.ask:
                self.asked.append(self.turns.pause)
            if answer != NOTHING:
                answers.append((self.silent_ms, answer))
            if answer.end:
                break
            if self.silent_ms >= SPECULATE_AT_MS and not self.turns.speculation_stands:
                self.turns.speculate()
                if self.rules.judges and self.turns.ask(float(self.silent_ms)):
                    self.asked.append(self.turns.pause)
        return answers

    def speak(self) -> int:
        self.silent_ms = 0
        return self.turns.speech_resumes()

    def verdict(self, probability: float | None, pause: int | None = None) -> Answer:
        turn_verdict = TurnVerdict("item_1", self.asked[-1] if pause is None else pause, probability, 40.0)
        return self.turns.verdict(turn_verdict, self.rules, float(self.silent_ms))

    def words(self, text: str = WORDS, pause: int | None = None, continuation: float | None = None) -> Answer:
        return self.turns.words(self.turns.speculation if pause is None else pause, text, continuation,
                                self.rules, float(self.silent_ms))

    def ready(self, pause: int | None = None) -> Answer:
        return self.turns.reply_ready(self.turns.speculation if pause is None else pause, self.rules)


def ended(answers: list[tuple[int, Answer]]) -> tuple[int, str | None]:
    """The silence the turn ended at, and the decision's outcome."""
    (at, answer), = [(at, a) for at, a in answers if a.end]
    return at, answer.decision.outcome if answer.decision else None


def test_a_pause_is_numbered_and_its_speculation_carries_the_number() -> None:
    story = Story()
    story.silence(2 * CHUNK_MS)
    assert story.turns.pause == story.turns.speculation == 1 and story.asked == [1]
    assert story.speak() == 1  # speech voids the speculation of pause 1
    story.silence(2 * CHUNK_MS)
    assert story.turns.pause == story.turns.speculation == 2 and story.asked == [1, 2]


def test_finished_with_its_reply_ready_first_ends_at_the_finished_pause() -> None:
    story = Story()
    story.silence(3 * CHUNK_MS)
    assert story.words() == NOTHING and story.ready() == NOTHING
    assert story.verdict(0.9) == NOTHING  # an early verdict waits until the pause is --turn_pause_ms long
    answers = story.silence(MAX_SILENCE_MS)
    assert ended(answers) == (FINISHED_PAUSE_MS, "finished")
    assert answers[0][1].decision is not None and answers[0][1].decision.probability == 0.9


def test_finished_with_the_floor_first_ends_when_the_reply_is_ready() -> None:
    story = Story()
    story.silence(PAUSE_MS)
    story.words()
    assert story.verdict(0.9) == NOTHING  # finished, but its reply is not ready
    assert story.silence(FINISHED_PAUSE_MS + CHUNK_MS - PAUSE_MS) == []  # past the floor: still not ready
    answer = story.ready()
    assert answer.end and answer.decision is not None and answer.decision.outcome == "finished"


def test_a_finished_turn_whose_reply_never_gets_ready_ends_at_the_silence_window() -> None:
    story = Story()
    story.silence(PAUSE_MS)
    story.words()
    story.verdict(0.9)
    assert ended(story.silence(MAX_SILENCE_MS)) == (SILENCE_MS, "finished")


def test_speech_resuming_inside_the_floor_keeps_the_turn_whole() -> None:
    story = Story()
    story.silence(PAUSE_MS)
    story.words()
    story.ready()
    assert story.verdict(0.9) == NOTHING  # finished and ready, but the pause is short of the floor
    assert story.silence(2 * CHUNK_MS) == []
    story.speak()  # a second sentence of the same request
    assert story.silence(FINISHED_PAUSE_MS - CHUNK_MS) == []  # nothing of the first pause holds
    assert story.ready(pause=1) == NOTHING


def test_unfinished_waits_to_the_longest_silence_allowed() -> None:
    story = Story()
    story.silence(PAUSE_MS)
    story.words("I would like a present for my")
    answer = story.verdict(0.9)  # sounds finished, but the words stop mid-phrase
    assert answer.report is not None and answer.report.outcome == "unfinished" and not answer.end
    assert ended(story.silence(MAX_SILENCE_MS)) == (MAX_SILENCE_MS, "timed_out")


def test_low_eagerness_waits_longer_for_an_unfinished_turn() -> None:
    story = Story("low")
    story.silence(PAUSE_MS)
    story.words("and the")
    story.verdict(0.1)
    assert ended(story.silence(2 * MAX_SILENCE_MS)) == (int(MAX_SILENCE_MS * 1.5), "timed_out")


@pytest.mark.parametrize("take_back_ms", [0, SILENCE_MS - CHUNK_MS])
def test_disputed_falls_back_to_the_silence_window_unless_its_reply_can_be_taken_back_for_as_long(
        take_back_ms: int) -> None:
    story = Story(take_back_ms=take_back_ms)
    story.silence(PAUSE_MS)
    story.words("It is on Friday afternoon.")
    story.ready()
    answer = story.verdict(0.1)  # sounds unfinished, reads as a whole sentence
    assert answer.report is not None and answer.report.outcome == "unfinished" and not answer.end
    assert ended(story.silence(MAX_SILENCE_MS)) == (SILENCE_MS, "disputed")


def test_disputed_ends_as_a_finished_turn_does_where_its_reply_can_be_taken_back() -> None:
    story = Story()
    story.silence(PAUSE_MS)
    story.words("It is on Friday afternoon.")
    answer = story.verdict(0.1)
    assert answer.report is not None and answer.report.outcome == "unfinished" and not answer.end
    assert story.silence(CHUNK_MS) == []  # its reply is not ready yet
    assert story.ready() == NOTHING  # ready, but the pause is short of the floor
    assert ended(story.silence(MAX_SILENCE_MS)) == (FINISHED_PAUSE_MS, "disputed")


def test_a_finished_turn_that_cannot_be_taken_back_waits_out_a_pause_between_sentences() -> None:
    story = Story(take_back_ms=0)
    story.silence(PAUSE_MS)
    story.words()
    story.ready()
    assert story.verdict(0.9) == NOTHING
    assert ended(story.silence(MAX_SILENCE_MS)) == (SENTENCE_PAUSE_MS, "finished")


def test_no_verdict_leaves_the_turn_to_the_silence_rule() -> None:
    story = Story()
    story.silence(PAUSE_MS)
    story.words()
    assert story.verdict(None) == NOTHING
    assert ended(story.silence(MAX_SILENCE_MS)) == (SILENCE_MS, "no_answer")


def test_a_verdict_without_the_words_of_its_pause_waits_for_them() -> None:
    story = Story()
    story.silence(PAUSE_MS)
    assert story.verdict(0.9) == NOTHING
    story.silence(CHUNK_MS)
    assert story.words() == NOTHING  # finished now, but its reply is not ready
    assert story.ready() == NOTHING  # and the pause is short of the floor
    assert ended(story.silence(MAX_SILENCE_MS)) == (FINISHED_PAUSE_MS, "finished")


def test_words_that_never_come_leave_the_turn_to_the_silence_rule() -> None:
    story = Story()
    story.silence(PAUSE_MS)
    story.verdict(0.9)
    assert ended(story.silence(MAX_SILENCE_MS)) == (SILENCE_MS, "no_answer")


def test_eagerness_high_ends_a_finished_turn_at_the_judged_pause() -> None:
    story = Story("high")
    story.silence(3 * CHUNK_MS)
    story.words()
    story.ready()
    story.verdict(0.9)
    assert ended(story.silence(MAX_SILENCE_MS)) == (PAUSE_MS, "finished")


def test_answers_about_an_older_pause_are_ignored() -> None:
    story = Story()
    story.silence(3 * CHUNK_MS)
    story.speak()
    story.silence(3 * CHUNK_MS)  # pause 2, asked and speculated on
    assert story.verdict(0.9, pause=1) == NOTHING
    assert story.words(pause=1) == NOTHING
    assert story.ready(pause=1) == NOTHING
    assert ended(story.silence(MAX_SILENCE_MS)) == (MAX_SILENCE_MS, "timed_out")  # no verdict of its own


def test_the_detector_is_asked_once_per_pause() -> None:
    story = Story()
    story.silence(PAUSE_MS + 4 * CHUNK_MS)
    story.speak()
    story.silence(PAUSE_MS)
    assert story.asked == [1, 2]
    assert story.turns.is_current(2) and not story.turns.is_current(1)


def test_without_the_detector_the_silence_window_ends_the_turn_undecided() -> None:
    story = Story(judges=False)
    assert ended(story.silence(MAX_SILENCE_MS)) == (SILENCE_MS, None)
    assert story.asked == [] and story.turns.speculation == 1
