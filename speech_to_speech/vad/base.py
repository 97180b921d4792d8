"""Turn tracking shared by every VAD backend.

A backend only scores chunks (``speech_probability``); this class turns the
scores into speech_started / speech_stopped events and whole utterances,
with thresholds read from the live session config at every chunk.

What ends a turn depends on the session's ``turn_detection.type``:
``server_vad`` ends it after ``silence_duration_ms`` of silence;
``semantic_vad``, when the unit has a turn detector, sends the turn's audio to
the detector as the pause begins (padded to ``--turn_pause_ms`` of silence) and
acts on its verdict (see :mod:`speech_to_speech.vad.turn_detector`). A turn
judged finished ends once it has paused ``--finished_pause_ms`` and the
speculative reply to the pause's words is ready to play (``ReplyReady``), or
at the silence rule's window, whichever comes first.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from speech_to_speech import ids
from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.pipeline.handler import BackendHandler
from speech_to_speech.pipeline.messages import (
    AudioChunk,
    ClearInput,
    CommitInput,
    FloatAudio,
    ReplyReady,
    SpeculationVoided,
    SpeculativeTranscript,
    SpeechOngoing,
    SpeechStarted,
    SpeechStopped,
    TurnDecision,
    TurnVerdict,
    Utterance,
)
from speech_to_speech.vad.smart_turn import WINDOW_SAMPLES
from speech_to_speech.vad.turn_detector import SILENCE, TurnDetector, eagerness, judged_finished, reads_finished

CHUNK_MS = VAD_CHUNK * 1000 // PIPELINE_RATE  # 32 ms


def _ms(samples: int) -> int:
    return samples * 1000 // PIPELINE_RATE


def paused_for(chunks: list[AudioChunk], missing_ms: int) -> FloatAudio:
    """The turn's audio with its trailing pause made ``missing_ms`` longer, by repeating its last chunk.

    The last chunk is silence (the pause has begun): repeating it keeps the
    room's own noise floor, where digital zeros would sound like no microphone.
    """
    samples = np.concatenate([c.samples for c in chunks])
    missing = max(0, missing_ms) * PIPELINE_RATE // 1000
    if not missing:
        return samples
    return np.concatenate([samples, np.resize(chunks[-1].samples, missing)])


class VADHandler(BackendHandler):
    stage = "vad"
    consumes = (AudioChunk, CommitInput, ClearInput, TurnVerdict, SpeculativeTranscript, ReplyReady)
    # Whether the backend tells speech from other sound; a turn model has nothing to judge otherwise.
    hears_speech: ClassVar[bool] = True

    def __init__(self, *args: Any, turn_detector: TurnDetector | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.turn_detector = turn_detector
        self._pauses = 0
        self._reset_turn()

    # ------------------------------------------------------------ backend hooks

    def speech_probability(self, chunk: FloatAudio) -> float:
        raise NotImplementedError

    def reset_model_state(self) -> None:
        """Forget recurrent model state (per session)."""

    # ------------------------------------------------------------ settings read per chunk

    def _threshold(self) -> float:
        td = self.context.config.current.turn_detection
        return td.threshold if td is not None and td.threshold is not None else self.settings.thresh

    def _silence_ms(self) -> int:
        td = self.context.config.current.turn_detection
        if td is not None and td.silence_duration_ms is not None:
            return td.silence_duration_ms
        return int(self.settings.min_silence_ms)

    def _pad_ms(self) -> int:
        td = self.context.config.current.turn_detection
        if td is not None and td.prefix_padding_ms is not None:
            return td.prefix_padding_ms
        return int(self.settings.speech_pad_ms)

    # ------------------------------------------------------------ state

    def _reset_turn(self) -> None:
        self._history: deque[AudioChunk] = deque()  # recent chunks for the prefix pad
        self._speech: list[AudioChunk] = []  # chunks of the current turn
        self._in_speech = False
        self._started_sent = False
        self._voiced_ms = 0
        self._silence_run_ms = 0
        self._item_id: str | None = None
        self._reset_voice()
        self._manual_buffer: list[AudioChunk] = []
        # A speculative utterance of this turn is out and no speech followed it.
        self._speculated = False
        self._speculations = 0  # speculative utterances of this turn so far (their numbers)
        self._interim_at_ms = 0  # the voiced ms of this turn at its last interim utterance
        self._ready: tuple[str | None, int] | None = None  # (turn, speculation) whose reply is ready
        self._reset_pause()

    def _reset_voice(self) -> None:
        # The voiced span of the current turn, in input samples (its first voiced chunk to its last):
        # the audio clock the overlap policy decides on.
        self._voice_start = self._voice_end = 0
        self._ongoing_sent = False  # SpeechOngoing went out for this turn

    def _speech_ms(self) -> int:
        return _ms(self._voice_end - self._voice_start)

    def _reset_pause(self) -> None:
        """Speech (or a new turn): whatever the detector was asked about the last pause no longer applies."""
        self._pause_asked = False  # this pause was sent to the turn detector
        self._pauses += 1  # numbers pauses, so a late verdict is told from a current one
        self._asked_at = 0.0
        # The silence after which this pause ends the turn; None while the detector's verdict is awaited.
        self._turn_silence_ms: int | None = None
        self._silence_outcome = "no_answer"  # what a turn ended by that silence is recorded as
        self._verdict: TurnVerdict | None = None
        self._words: str | None = None  # the transcript of this pause's speculative STT pass
        self._continuation: float | None = None  # and the STT's doubt about its end (see reads_finished)
        self._decided = False  # this pause was judged (a decision went out)
        # Judged finished, waiting for its reply to be ready (or for the silence window) to end the turn.
        self._finished: TurnDecision | None = None

    def on_session_end(self) -> None:
        self._reset_turn()
        self.reset_model_state()

    # ------------------------------------------------------------ processing

    def process(self, item: Any) -> Iterator[Any]:
        if isinstance(item, TurnVerdict):
            yield from self._judge(item)
            return
        if isinstance(item, SpeculativeTranscript):
            yield from self._heard(item)
            return
        if isinstance(item, ReplyReady):
            yield from self._reply_ready(item)
            return
        if isinstance(item, ClearInput):
            self._void_speculations()
            self._reset_turn()
            return
        if isinstance(item, CommitInput):
            yield from self._commit(item)
            return
        chunk: AudioChunk = item
        config = self.context.config.current
        if not config.server_vad_enabled:
            self._manual_buffer.append(chunk)
            return
        probability = self.speech_probability(chunk.samples)
        yield from self._track(chunk, probability, config.interrupt_response_enabled)

    def _track(self, chunk: AudioChunk, probability: float, interrupt: bool) -> Iterator[Any]:
        threshold = self._threshold()
        voiced = probability >= threshold
        if not self._in_speech:
            self._history.append(chunk)
            max_history = max(1, self._pad_ms() // CHUNK_MS + 1)
            while len(self._history) > max_history:
                self._history.popleft()
            if not voiced:
                return
            self._in_speech = True
            self._speech = list(self._history)
            self._history.clear()
            self._voiced_ms = CHUNK_MS
            self._interim_at_ms = 0
            self._silence_run_ms = 0
            self._item_id = ids.item_id()
            self._voice_start = chunk.offset
            self._voice_end = chunk.offset + VAD_CHUNK
        else:
            self._speech.append(chunk)
            if voiced:
                self._voiced_ms += CHUNK_MS
                self._voice_end = chunk.offset + VAD_CHUNK
                if self._silence_run_ms:
                    self._reset_pause()
                self._silence_run_ms = 0
                if self._speculated:
                    self._speculated = False
                    self.emit_event(SpeculationVoided(self._item_id, self._speculations))
            elif probability < max(threshold - 0.15, 0.01):
                self._silence_run_ms += CHUNK_MS
            else:
                if self._silence_run_ms:
                    self._reset_pause()
                self._silence_run_ms = 0  # hysteresis band: neither speech nor silence
        if not self._started_sent and self._voiced_ms >= self.settings.min_speech_ms:
            self._started_sent = True
            self.emit_event(SpeechStarted(_ms(self._speech[0].offset), interrupt_response=interrupt,
                                          item_id=self._item_id, speech_ms=self._speech_ms()))
        if voiced and self._started_sent:
            self._note_ongoing()
            yield from self._interim()
        turn_ms = len(self._speech) * CHUNK_MS
        if turn_ms >= self.settings.max_speech_ms:
            yield from self._end_turn(manual=False)
            return
        if self._silence_run_ms and self._started_sent and self._detects_turns():
            if self._finished is not None and self._may_end_finished():
                yield from self._end_turn(manual=False, decision=self._finished)
                return
            if self._silence_run_ms >= self._max_turn_silence_ms():
                yield from self._end_turn(manual=False, decision=self._decision("timed_out"))
                return
            if self._turn_silence_ms is not None and self._silence_run_ms >= self._turn_silence_ms:
                yield from self._end_turn(manual=False, decision=self._decision(self._silence_outcome))
                return
            if not self._pause_asked and self._silence_run_ms >= self.settings.turn_pause_ms:
                self._ask_detector()
            elif self._paused_long_enough():
                # A verdict that came early (asked as the pause began) applies once the pause is this long.
                yield from self._decide()
                if not self._in_speech:
                    return
        elif self._silence_run_ms >= self._silence_ms():
            yield from self._end_turn(manual=False)
            return
        if self._should_speculate():
            # A pause that may end the turn: let the STT (and the response) start now, so that
            # by the end of the silence window the work is done or well under way.
            self._speculated = True
            self._speculations += 1
            end_ms = _ms(self._speech[-1].offset + VAD_CHUNK)
            yield replace(self._utterance(self._speech, self._item_id, manual=False, end_ms=end_ms),
                          speculation=self._speculations)
            if self._detects_turns() and not self._pause_asked:
                # The detector hears the pause as it will sound at --turn_pause_ms, now: its verdict
                # is then in by the time the reply is, instead of after it (and off the LLM's core).
                self._ask_detector()

    def _interim(self) -> Iterator[Utterance]:
        """The speech so far, after every ``--interim_transcript_ms`` more of voice: the STT transcribes it
        while the user goes on (when nothing newer of the turn waits), for the live transcript and so that
        the LLM reads the words ahead of the pause."""
        every = self.settings.interim_transcript_ms
        if not every or self._voiced_ms - self._interim_at_ms < every:
            return
        self._interim_at_ms = self._voiced_ms
        end_ms = _ms(self._speech[-1].offset + VAD_CHUNK)
        yield replace(self._utterance(self._speech, self._item_id, manual=False, end_ms=end_ms), interim=True)

    def _note_ongoing(self) -> None:
        """Say once per turn when its voiced span reaches the session's ``overlap_barge_in_ms`` (if set)."""
        mark = self.context.config.current.overlap_barge_in_ms
        if mark is not None and not self._ongoing_sent and self._speech_ms() >= mark:
            self._ongoing_sent = True
            self.emit_event(SpeechOngoing(self._item_id, self._speech_ms()))

    # ------------------------------------------------------------ the turn detector

    def _detects_turns(self) -> bool:
        """This session's turns are judged by the detector (semantic_vad, and the unit has one)."""
        td = self.context.config.current.turn_detection
        return self.turn_detector is not None and td is not None and td.type == "semantic_vad"

    def _max_turn_silence_ms(self) -> int:
        scale = eagerness(self.context.config.current.turn_detection).max_silence_scale
        return int(self.settings.max_turn_silence_ms * scale)

    def _ask_detector(self) -> None:
        assert self.turn_detector is not None
        self._pause_asked = True
        self._asked_at = time.monotonic()
        samples = paused_for(self._speech, self.settings.turn_pause_ms - self._silence_run_ms)[-WINDOW_SAMPLES:]
        pause = self._pauses
        self.turn_detector.ask(samples, item_id=self._item_id, pause=pause,
                               still_wanted=lambda: self._pauses == pause, reply_to=self.queue_in)

    def _judge(self, verdict: TurnVerdict) -> Iterator[Any]:
        """The detector's answer about a pause (ignored if speech resumed or the turn ended meanwhile)."""
        if (self._in_speech and self._pause_asked and verdict.item_id == self._item_id
                and verdict.pause == self._pauses and self._silence_run_ms > 0):
            self._verdict = verdict
            yield from self._decide()

    def _heard(self, item: SpeculativeTranscript) -> Iterator[Any]:
        """The words of this pause's speculative STT pass (the service hands them back)."""
        if (self._in_speech and self._speculated and item.item_id == self._item_id
                and item.speculation == self._speculations and self._silence_run_ms > 0):
            self._words, self._continuation = item.transcript, item.continuation
            yield from self._decide()

    def _reply_ready(self, item: ReplyReady) -> Iterator[Any]:
        """The speculative reply to this pause's words can play (or none will come): a finished turn may end."""
        if not (self._in_speech and self._speculated and item.item_id == self._item_id
                and item.speculation == self._speculations):
            return  # about words the user has gone past, or a turn that is over
        self._ready = (item.item_id, item.speculation)
        if self._finished is not None and self._silence_run_ms > 0 and self._detects_turns() \
                and self._may_end_finished():
            yield from self._end_turn(manual=False, decision=self._finished)

    def _reply_is_ready(self) -> bool:
        return not self._speculated or self._ready == (self._item_id, self._speculations)

    def _paused_long_enough(self) -> bool:
        """The pause has lasted --turn_pause_ms: what the detector judged (early, on the pause padded
        to that length) now applies. A shorter dip is never decided on, whatever the verdict."""
        return self._silence_run_ms >= self.settings.turn_pause_ms

    def _decide(self) -> Iterator[Any]:
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
          afternoon."): ``disputed``, the silence rule's window ends the turn,
          as it would without a detector. Some voices (synthetic ones above
          all) sound unfinished at the end of every question.
        """
        verdict = self._verdict
        if verdict is None or self._decided or not self._paused_long_enough():
            return  # a verdict that came early waits until the pause is as long as it was judged with
        if verdict.probability is None:
            # No answer (failed, or skipped): the silence rule decides.
            self._fall_back_to_silence("no_answer")
            yield from self._end_if_silent_enough()
            return
        if self._speculated and self._words is None:
            self._fall_back_to_silence("no_answer")  # should the words never come, silence decides
            return
        self._decided = True
        words = self._words or ""
        level = eagerness(self.context.config.current.turn_detection)
        if judged_finished(verdict.probability, words, level, self._continuation):
            yield from self._end_finished()
            return
        if verdict.probability < level.finished_at and reads_finished(words, self._continuation):
            self._fall_back_to_silence("disputed")
            self.emit_event(self._decision("unfinished"))
            yield from self._end_if_silent_enough()
            return
        self._turn_silence_ms = None
        self.emit_event(self._decision("unfinished"))

    def _end_finished(self) -> Iterator[Any]:
        """A finished turn ends once its reply can play: sooner gains no time, and speech that resumes
        in between (a second sentence of the same request) keeps the turn whole."""
        decision = self._decision("finished")
        if self._may_end_finished():
            yield from self._end_turn(manual=False, decision=decision)
        else:
            self._finished = decision

    def _may_end_finished(self) -> bool:
        """A turn judged finished ends now: its reply can play and the pause is past ``--finished_pause_ms``
        (a pause between two sentences of one request is shorter; ending sooner would answer the first),
        or, at eagerness high, past ``--turn_pause_ms``. Or its reply is not ready yet, but the silence rule's
        window has passed: it ends as that rule would end it."""
        if self._silence_run_ms >= self._finished_cap_ms():
            return True
        waits = eagerness(self.context.config.current.turn_detection).waits_between_sentences
        floor = self.settings.finished_pause_ms if waits else self.settings.turn_pause_ms
        return self._reply_is_ready() and self._silence_run_ms >= floor

    def _finished_cap_ms(self) -> int:
        """The longest a finished turn waits for its reply: the silence rule's window (or less)."""
        return min(self._silence_ms(), self._max_turn_silence_ms())

    def _fall_back_to_silence(self, outcome: str) -> None:
        self._turn_silence_ms, self._silence_outcome = self._silence_ms(), outcome

    def _end_if_silent_enough(self) -> Iterator[Any]:
        if self._turn_silence_ms is not None and self._silence_run_ms >= self._turn_silence_ms:
            yield from self._end_turn(manual=False, decision=self._decision(self._silence_outcome))

    def _decision(self, outcome: str) -> TurnDecision:
        verdict = self._verdict
        return TurnDecision(
            item_id=self._item_id,
            detector=self.turn_detector.name if self.turn_detector is not None else SILENCE,
            outcome=outcome,
            probability=verdict.probability if verdict else None,
            inference_ms=round(verdict.inference_ms, 1) if verdict else 0.0,
            words=self._words,
            continuation=self._continuation,
            asked_at=self._asked_at,
            decided_at=time.monotonic(),
        )

    # ------------------------------------------------------------ speculation

    def _void_speculations(self) -> None:
        """The turn will not end as itself: what was speculated on it must not be answered."""
        if self._speculations:
            self.emit_event(SpeculationVoided(self._item_id, self._speculations))

    def _should_speculate(self) -> bool:
        after = self.settings.speculation_silence_ms
        config = self.context.config.current
        td = config.turn_detection
        return (
            after > 0
            and self._started_sent
            and not self._speculated
            and self._silence_run_ms >= after
            and td is not None
            and td.create_response
        )

    def _end_turn(self, manual: bool, decision: TurnDecision | None = None) -> Iterator[Any]:
        speech, started, item_id = self._speech, self._started_sent, self._item_id
        speech_ms = self._speech_ms()
        speculated, self._speculated = self._speculated, False
        reuses = self._speculations if speculated else 0
        # Keep only a pad's worth of the trailing silence, so the last word stays whole.
        trailing = max(0, self._silence_run_ms - self._pad_ms()) // CHUNK_MS
        self._in_speech = False
        self._speech = []
        self._started_sent = False
        self._voiced_ms = 0
        self._silence_run_ms = 0
        self._item_id = None
        self._speculations = 0
        self._reset_voice()
        self._reset_pause()
        if not started:
            return  # too short to be a turn: a click or a cough
        kept = speech[: max(len(speech) - trailing, 1)]
        end_ms = _ms(kept[-1].offset + VAD_CHUNK)
        if decision is not None:
            self.emit_event(decision)
        self.emit_event(SpeechStopped(end_ms, item_id=item_id, speech_ms=speech_ms))
        yield replace(self._utterance(kept, item_id, manual=manual, end_ms=end_ms), reuses=reuses)

    def _utterance(self, chunks: list[AudioChunk], item_id: str | None, *, manual: bool, end_ms: int) -> Utterance:
        samples = np.concatenate([c.samples for c in chunks]) if chunks else np.zeros(0, np.float32)
        return Utterance(
            samples=samples,
            audio_start_ms=_ms(chunks[0].offset) if chunks else end_ms,
            audio_end_ms=end_ms,
            item_id=item_id,
            manual=manual,
            vad_end_time=time.monotonic(),
        )

    def _commit(self, item: CommitInput) -> Iterator[Any]:
        """A manual commit ends the turn now with whatever audio is buffered."""
        if self._manual_buffer:
            chunks, self._manual_buffer = self._manual_buffer, []
            end_ms = _ms(chunks[-1].offset + VAD_CHUNK)
            yield self._utterance(chunks, item.item_id or ids.item_id(), manual=True, end_ms=end_ms)
            return
        if self._in_speech:
            chunks, item_id = self._speech, item.item_id or self._item_id
            started, speech_ms = self._started_sent, self._speech_ms()
            if item_id != self._item_id:
                self._void_speculations()  # the turn's words are committed under the client's id
            self._reset_turn()
            end_ms = _ms(chunks[-1].offset + VAD_CHUNK)
            if started:
                self.emit_event(SpeechStopped(end_ms, item_id=item_id, speech_ms=speech_ms))
            yield self._utterance(chunks, item_id, manual=True, end_ms=end_ms)
            return
        if item.item_id is not None:
            # The client was told this item was committed (silence under server VAD):
            # it still gets an utterance, so its transcription completes.
            chunks = list(self._history)
            self._history.clear()
            end_ms = _ms(chunks[-1].offset + VAD_CHUNK) if chunks else 0
            yield self._utterance(chunks, item.item_id, manual=True, end_ms=end_ms)
