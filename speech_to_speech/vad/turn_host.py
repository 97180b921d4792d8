"""The turn in progress on the VAD thread: the host of its TurnController (turns/controller.py).

The segmenter (vad/segmenter.py) says where speech is; this object makes the
speech a turn and carries it to its end. It gives the turn its item id and
says when it starts (``SpeechStarted``, once it has voice enough and is the
user's: vad/user_gate.py), goes on (``SpeechOngoing``) and stops
(``SpeechStopped``, after the ``TurnDecision`` that ended it). It hands the STT
the speech so far (interim and probe passes: turns/speech_so_far.py, and the
speculative utterance at a pause), sends a pause to the turn detector, and
does what the controller answers to the pause and to what comes back about it
on the VAD's input queue (``TurnFeedback`` in pipeline/queue_items.py: the
detector's verdict, the pause's words, its reply being ready, and the
service's probe).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace

from speech_to_speech import ids
from speech_to_speech.pipeline.messages.input_audio import (
    AudioChunk,
    SpeculationVoided,
    SpeechOngoing,
    SpeechStarted,
    SpeechStopped,
    TurnEnd,
    Utterance,
)
from speech_to_speech.pipeline.messages.transcription import SpeculativeTranscript
from speech_to_speech.pipeline.messages.turn_taking import ProbeSpeech, ReplyReady, TurnDecision, TurnVerdict
from speech_to_speech.pipeline.queue_items import StageEvent, TurnFeedback
from speech_to_speech.pipeline.queues import Sink
from speech_to_speech.turns.controller import Answer, Judgement, TurnController
from speech_to_speech.turns.speech_so_far import SpeechSoFar
from speech_to_speech.vad.listening import Listening
from speech_to_speech.vad.segmenter import Segmenter, ms, utterance
from speech_to_speech.vad.smart_turn import WINDOW_SAMPLES
from speech_to_speech.vad.turn_detector import SILENCE, TurnDetector, paused_for
from speech_to_speech.vad.user_gate import UserGate


class TurnHost:
    """One session's turns: ``user`` tells whose speech it is, ``detector`` (None: silence alone) judges pauses and
    answers on ``reply_to`` (the VAD's input queue), ``emit`` sends the turn's events to the service."""

    def __init__(self, user: UserGate, detector: TurnDetector | None, reply_to: Sink[TurnVerdict],
                 emit: Callable[[StageEvent], None], clock: Callable[[], float] = time.monotonic) -> None:
        self.user = user
        self.detector = detector
        self._reply_to = reply_to
        self._emit = emit
        self._clock = clock
        self.speech = Segmenter(clock)
        self.reset()

    def reset(self) -> None:
        """Forget the turn in progress and the one before it (a clear, a commit, a new session)."""
        self.speech.reset()
        self._new_turn()
        self._last_turn: tuple[str, int] | None = None  # the turn the VAD last ended: its item, its voice's end

    def new_session(self) -> None:
        self.reset()
        self.user.new_session()

    def _new_turn(self) -> None:
        self.item_id: str | None = None
        self.started = False  # SpeechStarted went out: the speech is a turn
        self._ongoing_sent = False  # SpeechOngoing went out for this turn
        self.controller = TurnController()  # this turn's pauses, and when one ends it
        self._passes = SpeechSoFar()

    # ------------------------------------------------------------ audio

    def hear(self, chunk: AudioChunk, probability: float, listening: Listening) -> Iterator[Utterance]:
        """The next chunk of audio and its speech probability."""
        sound = self.speech.hear(chunk, probability, listening.threshold, listening.pad_ms)
        self.user.chunk_heard()
        if sound == "quiet":
            return
        if sound == "began":
            self.item_id = ids.item_id()
            self.user.new_speech(chunk.samples, chunk.echoed)
        elif sound == "voiced":
            self.user.heard(chunk.samples, chunk.echoed)
            voided = self.controller.speech_resumes()
            if voided:
                self._emit(SpeculationVoided(self.item_id, voided))
        elif sound == "near":
            self.controller.pause_ends()
        voiced = sound in ("began", "voiced")
        if voiced and not self.started:
            self._start_if_turn(listening)
        if voiced and self.started:
            self._note_ongoing(listening.ongoing_ms)
            yield from self._probe()
            yield from self._interim(listening.interim_every_ms)
        if self.speech.length_ms >= listening.max_speech_ms:
            yield from self._end(listening)
            return
        yield from self._carry_out(self.controller.silence(self.speech.silence_ms, listening.rules, self._clock(),
                                                           started=self.started), listening)
        if self.speech.in_speech:
            yield from self._speculate(listening)

    def _start_if_turn(self, listening: Listening, ended: bool = False) -> None:
        """The speech becomes a turn once it has voice enough and is the user's (``ended``: it is over, and
        the speaker check judges what there was)."""
        voiced_ms = self.speech.voiced_ms
        if voiced_ms < listening.min_speech_ms or not self.user.is_user(voiced_ms, ended):
            return
        self.started = True
        after_item_id, after_end = self._last_turn or (None, 0)
        speech = self.speech
        self._emit(SpeechStarted(ms(speech.chunks[0].offset), interrupt_response=listening.interrupt,
                                 item_id=self.item_id, speech_ms=speech.speech_ms, after_item_id=after_item_id,
                                 after_silence_ms=ms(speech.voice_start - after_end) if after_item_id else None))

    def _note_ongoing(self, mark_ms: int | None) -> None:
        """Say once per turn when its voiced span reaches the session's ``overlap_barge_in_ms`` (if set)."""
        if mark_ms is not None and not self._ongoing_sent and self.speech.speech_ms >= mark_ms:
            self._ongoing_sent = True
            self._emit(SpeechOngoing(self.item_id, self.speech.speech_ms))

    def _so_far(self) -> Utterance:
        return utterance(self.speech.chunks, self.item_id, manual=False)

    def _interim(self, every_ms: int) -> Iterator[Utterance]:
        """The speech so far, for the live transcript and so that the LLM reads the words ahead of the pause
        (the STT transcribes it when nothing newer of the turn waits)."""
        if self._passes.interim_due(self.speech.voiced_ms, every_ms):
            yield replace(self._so_far(), interim=True)

    def _probe(self) -> Iterator[Utterance]:
        if self._passes.probe_due(self.speech.voiced_ms):
            yield replace(self._so_far(), interim=True, probe=True)

    def _speculate(self, listening: Listening) -> Iterator[Utterance]:
        """A pause that may end the turn: let the STT (and the response) start now, so that by the end of the
        silence window the work is done or well under way."""
        after = listening.speculate_after_ms
        if not (after > 0 and self.started and not self.controller.speculation_stands
                and self.speech.silence_ms >= after):
            return
        yield replace(self._so_far(), speculation=self.controller.speculate())
        if listening.rules.judges and self.controller.ask(self._clock()):
            # The detector hears the pause as it will sound at --turn_pause_ms, now: its verdict is then in by
            # the time the reply is, instead of after it (and off the LLM's core).
            self._ask_detector(listening)

    # ------------------------------------------------------------ what comes back about the turn

    def feedback(self, item: TurnFeedback, listening: Listening) -> Iterator[Utterance]:
        """An answer about this turn from another thread (one about a turn that ended is ignored)."""
        if not self.speech.in_speech or item.item_id != self.item_id:
            return
        now = self._clock()
        if isinstance(item, TurnVerdict):  # the detector's, about a pause
            yield from self._carry_out(self.controller.verdict(item, listening.rules, now), listening)
        elif isinstance(item, SpeculativeTranscript):  # the words of a pause's speculative STT pass
            yield from self._carry_out(self.controller.words(item.speculation, item.transcript, item.continuation,
                                                             listening.rules, now, item.language), listening)
        elif isinstance(item, ReplyReady):  # the reply to a pause's words can play (or none will come)
            yield from self._carry_out(self.controller.reply_ready(item.speculation, listening.rules), listening)
        elif isinstance(item, ProbeSpeech):  # the service judges this speech by its words: it gets them now or soon
            self._passes.ask_probe(item.min_new_ms)
            yield from self._probe()

    # ------------------------------------------------------------ the turn's end

    def _carry_out(self, answer: Answer, listening: Listening) -> Iterator[Utterance]:
        """Do what the turn controller answered."""
        if answer.ask:
            self._ask_detector(listening)
        if answer.report is not None:
            self._emit(self._decision(answer.report))
        if answer.end:
            decision = self._decision(answer.decision) if answer.decision is not None else None
            yield from self._end(listening, decision)

    def _ask_detector(self, listening: Listening) -> None:
        assert self.detector is not None
        samples = paused_for(self.speech.chunks, listening.rules.turn_pause_ms - self.speech.silence_ms)
        item_id, pause = self.item_id, self.controller.pause
        # Read on the detector's thread when it gets to the question: is this turn still at this pause?
        self.detector.ask(samples[-WINDOW_SAMPLES:], item_id=item_id, pause=pause, reply_to=self._reply_to,
                          still_wanted=lambda: self.item_id == item_id and self.controller.is_current(pause))

    def _decision(self, judgement: Judgement) -> TurnDecision:
        return judgement.decision(self.item_id, self.detector.name if self.detector is not None else SILENCE)

    def _end(self, listening: Listening, decision: TurnDecision | None = None) -> Iterator[Utterance]:
        if not self.started:
            self._start_if_turn(listening, ended=True)  # speech too short for a print while it went on
        started, item_id, voiced = self.started, self.item_id, self.user.voiced
        reuses = self.controller.speculation if self.controller.speculation_stands else 0
        segment = self.speech.end(kept_silence_ms=listening.pad_ms)
        self._new_turn()
        if not started:
            return  # too short to be a turn: a click or a cough
        self._last_turn = None if item_id is None else (item_id, segment.voice_end)
        if decision is not None:
            self._emit(decision)
        self._emit(SpeechStopped(segment.end_ms, item_id=item_id, speech_ms=segment.speech_ms))
        # The speech ended when its last voiced audio came in: the user's time, whatever pace the audio came at.
        yield replace(utterance(segment.chunks, item_id, manual=False), reuses=reuses,
                      ended=TurnEnd(self._clock(), segment.voiced_at))
        self.user.learn(voiced)  # once the utterance is on its way to the STT

    def void_speculation(self) -> None:
        """The turn will not end as itself: what was speculated on it must not be answered."""
        if self.controller.speculation:
            self._emit(SpeculationVoided(self.item_id, self.controller.speculation))

    def commit(self, item_id: str | None) -> Iterator[Utterance]:
        """The client ends the turn now, under its ``item_id`` (None: the turn's own), with the audio heard."""
        if self.speech.in_speech:
            committed = item_id or self.item_id
            if committed != self.item_id:
                self.void_speculation()  # the turn's words are committed under the client's id
            started = self.started
            segment = self.speech.end()
            self.reset()
            if started:
                self._emit(SpeechStopped(segment.end_ms, item_id=committed, speech_ms=segment.speech_ms))
            yield utterance(segment.chunks, committed, manual=True)
        elif item_id is not None:
            # The client was told this item was committed (silence under server VAD): it still gets an
            # utterance, so its transcription completes.
            yield utterance(self.speech.take_pad(), item_id, manual=True)
