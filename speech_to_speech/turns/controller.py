"""One turn's pauses, and whether one of them ends it.

The VAD feeds the controller what it sees, in milliseconds of audio: the
silence grew to N ms (or the user speaks), a speculative utterance was cut at
this pause, and the answers that come back about a pause: the detector's
verdict, the words of its speculative STT pass, its reply being ready to play.
Each event is answered with what to do: nothing, ask the detector, report a
decision, or end the turn (with a decision, or by the plain silence rule).

A pause is known by one number, its place in the turn (1, 2, …): the
detector's ``TurnVerdict.pause`` and the ``speculation`` (and ``reuses``) of
the utterances, transcripts and ``ReplyReady`` made at it all carry it, so a
late answer about an older pause is told from one about the current pause.
A new turn gets a new controller.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from speech_to_speech.pipeline.messages.turn_taking import TurnDecision, TurnVerdict
from speech_to_speech.protocol.metadata import TurnOutcome
from speech_to_speech.turns.rules import SENTENCE_PAUSE_MS, Eagerness, judged_finished, reads_finished


@dataclass(frozen=True)
class TurnRules:
    """The settings a pause is judged by, read afresh at every chunk (a session may change them)."""

    judges: bool  # the detector judges this session's pauses (semantic_vad, and the unit has one)
    silence_ms: int  # the silence rule's window (silence_duration_ms)
    turn_pause_ms: int  # the pause the detector judges (--turn_pause_ms)
    finished_pause_ms: int  # a pause between two sentences of one request (--finished_pause_ms)
    max_turn_silence_ms: int  # the longest an unfinished turn waits, before eagerness (--max_turn_silence_ms)
    level: Eagerness
    # How long after a turn's end speech still takes its reply back (--take_back_within_ms; 0: never,
    # and always 0 in a session whose interrupt_response is false).
    take_back_ms: int

    @property
    def takes_back(self) -> bool:
        return self.take_back_ms > 0

    @property
    def disputed_ends_early(self) -> bool:
        """A disputed turn ends as a finished one does: its reply is taken back on any speech the silence
        window would have waited for, so ending it sooner never splits what that rule keeps whole."""
        return self.take_back_ms >= self.silence_ms

    @property
    def max_silence_ms(self) -> int:
        return int(self.max_turn_silence_ms * self.level.max_silence_scale)

    @property
    def finished_cap_ms(self) -> int:
        """The longest a finished turn waits for its reply: the silence rule's window (or less)."""
        return min(self.silence_ms, self.max_silence_ms)

    @property
    def finished_floor_ms(self) -> int:
        """The pause a finished turn waits out: one between two sentences, or at eagerness high the judged one.

        A reply that cannot be taken back must not start on a pause between two sentences of one
        request, so then that pause is at least :data:`SENTENCE_PAUSE_MS`."""
        if not self.level.waits_between_sentences:
            return self.turn_pause_ms
        return self.finished_pause_ms if self.takes_back else max(self.finished_pause_ms, SENTENCE_PAUSE_MS)


@dataclass(frozen=True)
class Judgement:
    """How a pause was judged, and on what evidence (the VAD adds the turn's id and the detector's name)."""

    outcome: TurnOutcome  # see TurnDecision.outcome
    probability: float | None = None
    inference_ms: float = 0.0
    words: str | None = None
    continuation: float | None = None
    asked_at: float = 0.0  # the marks the controller was handed when it asked and when it decided
    decided_at: float = 0.0

    def decision(self, item_id: str | None, detector: str) -> TurnDecision:
        """This judgement as the event the VAD emits for the turn ``item_id``, judged by ``detector``."""
        return TurnDecision(item_id=item_id, detector=detector, outcome=self.outcome, probability=self.probability,
                            inference_ms=self.inference_ms, words=self.words, continuation=self.continuation,
                            asked_at=self.asked_at, decided_at=self.decided_at)


@dataclass(frozen=True)
class Answer:
    """What the VAD does about an event: any of ask, report, end (none of them: nothing)."""

    ask: bool = False  # send this pause to the detector (its audio padded to --turn_pause_ms)
    report: Judgement | None = None  # a decision to report; the turn goes on
    end: bool = False  # end the turn now
    decision: Judgement | None = None  # the decision it ends with (None: the plain silence rule)


NOTHING = Answer()


class TurnController:
    """The pauses of one turn: what was asked and heard about the latest, and when it ends the turn."""

    def __init__(self) -> None:
        self.pause = 0  # the number of the turn's latest pause (0: none yet)
        self.pausing = False  # that pause goes on: no speech, nor near-speech, since it began
        self.speculation = 0  # the pause this turn's latest speculative utterance was cut at (0: none)
        self.speculation_stands = False  # no speech followed it: its words may still be the turn's
        self.ended = False  # an answer ended the turn; nothing more is decided
        self._ready = 0  # the pause whose speculative reply can play
        self._silence_ms = 0
        self._forget_pause()

    def _forget_pause(self) -> None:
        self.asked = False  # this pause was sent to the detector
        self._asked_at = 0.0
        # The silence after which this pause ends the turn; None while the detector's verdict is awaited.
        self._turn_silence_ms: int | None = None
        self._silence_outcome: TurnOutcome = "no_answer"  # what a turn ended by that silence is recorded as
        self._verdict: TurnVerdict | None = None
        self._words: str | None = None  # the transcript of this pause's speculative STT pass
        self._continuation: float | None = None  # and the STT's doubt about its end (see reads_finished)
        self._language: str | None = None  # and the language it was heard in (the rules read English words)
        self._decided = False  # this pause was judged (a decision went out)
        # Judged finished, waiting for its reply to be ready (or for the silence window) to end the turn.
        self._finished: Judgement | None = None

    # ------------------------------------------------------------ what segmentation sees

    def silence(self, silence_ms: int, rules: TurnRules, now: float, *, started: bool) -> Answer:
        """The user has been silent ``silence_ms`` (0: speaking); ``started``: the turn is long enough to be one."""
        if silence_ms and not self.pausing:
            self.pause += 1
            self.pausing = True
            self._forget_pause()
        self._silence_ms = silence_ms
        if self.ended:
            return NOTHING
        if not (silence_ms and started and rules.judges):
            return self._end(None) if silence_ms >= rules.silence_ms else NOTHING
        if self._finished is not None and self._may_end_finished(rules):
            return self._end(self._finished)
        if silence_ms >= rules.max_silence_ms:
            return self._end(self._judge("timed_out", now))
        if self._turn_silence_ms is not None and silence_ms >= self._turn_silence_ms:
            return self._end(self._judge(self._silence_outcome, now))
        if not self.asked and silence_ms >= rules.turn_pause_ms:
            return Answer(ask=self.ask(now))
        # A verdict that came early (asked as the pause began) applies once the pause is this long.
        return self._decide(rules, now)

    def pause_ends(self) -> None:
        """Speech, or sound close to it: whatever was asked or heard about the pause no longer applies."""
        self.pausing = False
        self._forget_pause()

    def speech_resumes(self) -> int:
        """The user speaks: the pause ends, and so does its speculation; the number voided (0: none)."""
        self.pause_ends()
        voided = self.speculation if self.speculation_stands else 0
        self.speculation_stands = False
        return voided

    def speculate(self) -> int:
        """A speculative utterance is cut at this pause: the number it carries."""
        self.speculation, self.speculation_stands = self.pause, True
        return self.pause

    def ask(self, now: float) -> bool:
        """Whether to send this pause to the detector now: once per pause."""
        if self.asked or self.ended:
            return False
        self.asked, self._asked_at = True, now
        return True

    def is_current(self, pause: int) -> bool:
        """A question about ``pause`` is still worth answering."""
        return self.pausing and not self.ended and pause == self.pause

    # ------------------------------------------------------------ answers about a pause

    def verdict(self, verdict: TurnVerdict, rules: TurnRules, now: float) -> Answer:
        """The detector's answer about a pause (ignored unless it is about this pause, still going on)."""
        if self.ended or not (self.pausing and self.asked and verdict.pause == self.pause):
            return NOTHING
        self._verdict = verdict
        return self._decide(rules, now)

    def words(self, pause: int, transcript: str, continuation: float | None, rules: TurnRules,
              now: float, language: str | None = None) -> Answer:
        """The words of the speculative STT pass cut at ``pause`` (ignored once speech went past them),
        heard in ``language`` (None: not said)."""
        if self.ended or not (self.pausing and self.speculation_stands and pause == self.speculation):
            return NOTHING
        self._words, self._continuation, self._language = transcript, continuation, language
        return self._decide(rules, now)

    def reply_ready(self, pause: int, rules: TurnRules) -> Answer:
        """The speculative reply to the words of ``pause`` can play (or none will come)."""
        if self.ended or not (self.speculation_stands and pause == self.speculation):
            return NOTHING  # about words the user has gone past
        self._ready = pause
        if self._finished is not None and self.pausing and rules.judges and self._may_end_finished(rules):
            return self._end(self._finished)
        return NOTHING

    # ------------------------------------------------------------ the decision

    def _decide(self, rules: TurnRules, now: float) -> Answer:
        """End the turn now, give it until the longest silence allowed, or leave it to the silence rule.

        The model hears whether the speech *sounds* finished; the words of the
        pause's speculative STT pass say whether it *reads* finished. When a
        speculative pass is out, the decision waits for its words, which costs
        no time: the held reply cannot go out before them anyway.

        - sounds finished, words read as a whole sentence: the turn ends, once its reply can play;
        - sounds finished, words stop mid-phrase ("… a present for my"): unfinished;
        - sounds finished, words neither ("… do I need for?", "… very much in"):
          it ends only on a confident score (:func:`judged_finished`), else unfinished;
        - sounds unfinished, words unfinished or unknown: unfinished, the turn
          waits up to the longest silence allowed;
        - sounds unfinished, but the words are a whole sentence ("… on Friday
          afternoon."): ``disputed``. Some voices (synthetic ones above all)
          sound unfinished at the end of every question. Where its reply would be
          taken back on speech at any time within the silence rule's window, it
          ends as a finished turn does; else that window ends it, as it would
          without a detector.

        A shorter dip than ``--turn_pause_ms`` is never decided on, whatever the verdict.
        """
        verdict = self._verdict
        if verdict is None or self._decided or self._silence_ms < rules.turn_pause_ms:
            return NOTHING  # a verdict that came early waits until the pause is as long as it was judged with
        if verdict.probability is None:
            # No answer (failed, or skipped): the silence rule decides.
            self._fall_back_to_silence("no_answer", rules)
            return self._end_if_silent_enough(now)
        if self.speculation_stands and self._words is None:
            self._fall_back_to_silence("no_answer", rules)  # should the words never come, silence decides
            return NOTHING
        self._decided = True
        words = self._words or ""
        if judged_finished(verdict.probability, words, rules.level, self._continuation, self._language):
            return self._end_finished(rules, now)
        if verdict.probability < rules.level.finished_at and reads_finished(words, self._continuation,
                                                                              self._language):
            if rules.disputed_ends_early:
                return replace(self._end_finished(rules, now, "disputed"), report=self._judge("unfinished", now))
            self._fall_back_to_silence("disputed", rules)
            unfinished = self._judge("unfinished", now)
            return replace(self._end_if_silent_enough(now), report=unfinished)
        self._turn_silence_ms = None
        return Answer(report=self._judge("unfinished", now))

    def _end_finished(self, rules: TurnRules, now: float, outcome: TurnOutcome = "finished") -> Answer:
        """A finished turn ends once its reply can play: sooner gains no time, and speech that resumes
        in between (a second sentence of the same request) keeps the turn whole."""
        finished = self._judge(outcome, now)
        if self._may_end_finished(rules):
            return self._end(finished)
        self._finished = finished
        return NOTHING

    def _may_end_finished(self, rules: TurnRules) -> bool:
        """A turn judged finished ends now: its reply can play and the pause is past its floor (a pause
        between two sentences of one request is shorter; ending sooner would answer the first). Or its
        reply is not ready yet, but the silence rule's window has passed: it ends as that rule would."""
        if self._silence_ms >= rules.finished_cap_ms:
            return True
        return self._reply_is_ready() and self._silence_ms >= rules.finished_floor_ms

    def _reply_is_ready(self) -> bool:
        return not self.speculation_stands or self._ready == self.speculation

    def _fall_back_to_silence(self, outcome: TurnOutcome, rules: TurnRules) -> None:
        self._turn_silence_ms, self._silence_outcome = rules.silence_ms, outcome

    def _end_if_silent_enough(self, now: float) -> Answer:
        if self._turn_silence_ms is not None and self._silence_ms >= self._turn_silence_ms:
            return self._end(self._judge(self._silence_outcome, now))
        return NOTHING

    def _end(self, decision: Judgement | None) -> Answer:
        self.ended = True
        return Answer(end=True, decision=decision)

    def _judge(self, outcome: TurnOutcome, now: float) -> Judgement:
        verdict = self._verdict
        return Judgement(
            outcome=outcome,
            probability=verdict.probability if verdict else None,
            inference_ms=round(verdict.inference_ms, 1) if verdict else 0.0,
            words=self._words,
            continuation=self._continuation,
            asked_at=self._asked_at,
            decided_at=now,
        )
