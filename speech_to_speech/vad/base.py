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

This class segments the audio and carries out what a
:class:`~speech_to_speech.turns.controller.TurnController` answers; that
object makes every decision about a pause, on this stage's audio clock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, ClassVar, get_args

import numpy as np

from speech_to_speech import ids
from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import TurnSettings, VADSettings
from speech_to_speech.pipeline.handler import BackendHandler
from speech_to_speech.pipeline.messages.input_audio import (
    AudioChunk,
    ClearInput,
    CommitInput,
    SpeculationVoided,
    SpeechOngoing,
    SpeechStarted,
    SpeechStopped,
    TurnEnd,
    Utterance,
)
from speech_to_speech.pipeline.messages.transcription import SpeculativeTranscript
from speech_to_speech.pipeline.messages.turn_taking import ProbeSpeech, ReplyReady, TurnDecision, TurnVerdict
from speech_to_speech.pipeline.queue_items import VADConsumed
from speech_to_speech.turns.controller import Answer, Judgement, TurnController, TurnRules
from speech_to_speech.turns.rules import eagerness
from speech_to_speech.vad.smart_turn import WINDOW_SAMPLES
from speech_to_speech.vad.speaker_embedder import shared_embedder
from speech_to_speech.vad.turn_detector import SILENCE, TurnDetector, paused_for
from speech_to_speech.vad.user_gate import UserGate

CHUNK_MS = VAD_CHUNK * 1000 // PIPELINE_RATE  # 32 ms


def _ms(samples: int) -> int:
    return samples * 1000 // PIPELINE_RATE


class VADHandler(BackendHandler):
    """Tells speech from silence and ends turns: given the vad section (``settings``) and the turns section
    (``turn_settings``: the pauses, take-back, speculation and interim passes it times)."""

    stage = "vad"
    settings: VADSettings  # the vad section
    given_sections: ClassVar[dict[str, str]] = {"turn_settings": "turns"}
    consumes = get_args(VADConsumed)
    # Whether the backend tells speech from other sound; a turn model has nothing to judge otherwise.
    hears_speech: ClassVar[bool] = True

    def __init__(self, *args: Any, turn_settings: TurnSettings | None = None,
                 turn_detector: TurnDetector | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.turn_settings = turn_settings or TurnSettings.model_validate({})
        self.turn_detector = turn_detector
        embedder = shared_embedder() if self.settings.speaker_check == "on" else None
        # This session's user, by level and voice; the level over the last min_speech_ms of voice may let speech in.
        self.user = UserGate(self.settings.user_level_margin_db, max(1, self.settings.min_speech_ms // CHUNK_MS),
                             embedder)
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
        self._interim_at_ms = 0  # the voiced ms of this turn at its last interim utterance
        self._probe_due_ms: int | None = None  # the voiced ms at which the probe the service asked for goes
        self._probed_at_ms = 0  # the voiced ms of this turn at its last probe
        self.turns = TurnController()  # this turn's pauses, and when one ends it
        self._last_turn: tuple[str, int] | None = None  # the turn the VAD last ended: its item, its voice's end

    def _reset_voice(self) -> None:
        # The voiced span of the current turn, in input samples (its first voiced chunk to its last):
        # the audio clock the overlap policy decides on.
        self._voice_start = self._voice_end = 0
        self._voiced_at = 0.0  # time.monotonic() when its last voiced chunk came in
        self._ongoing_sent = False  # SpeechOngoing went out for this turn

    def _speech_ms(self) -> int:
        return _ms(self._voice_end - self._voice_start)

    def on_session_end(self) -> None:
        self._reset_turn()
        self.user.new_session()
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
        if isinstance(item, ProbeSpeech):
            yield from self._probe_asked(item)
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
            self.user.new_speech(chunk.samples)
            self._history.clear()
            self._voiced_ms = CHUNK_MS
            self._interim_at_ms = self._probed_at_ms = 0
            self._probe_due_ms = None
            self._silence_run_ms = 0
            self._item_id = ids.item_id()
            self._voice_start = chunk.offset
            self._voice_end, self._voiced_at = chunk.offset + VAD_CHUNK, time.monotonic()
        else:
            self._speech.append(chunk)
            if voiced:
                self._voiced_ms += CHUNK_MS
                self.user.heard(chunk.samples)
                self._voice_end, self._voiced_at = chunk.offset + VAD_CHUNK, time.monotonic()
                self._silence_run_ms = 0
                voided = self.turns.speech_resumes()
                if voided:
                    self.emit_event(SpeculationVoided(self._item_id, voided))
            elif probability < max(threshold - 0.15, 0.01):
                self._silence_run_ms += CHUNK_MS
            else:
                self.turns.pause_ends()
                self._silence_run_ms = 0  # hysteresis band: neither speech nor silence
        if (not self._started_sent and voiced and self._voiced_ms >= self.settings.min_speech_ms
                and self.user.is_user(self._voiced_ms)):
            self._started_sent = True
            after_item_id, after_end = self._last_turn or (None, 0)
            self.emit_event(SpeechStarted(_ms(self._speech[0].offset), interrupt_response=interrupt,
                                          item_id=self._item_id, speech_ms=self._speech_ms(),
                                          after_item_id=after_item_id,
                                          after_silence_ms=_ms(self._voice_start - after_end) if after_item_id
                                          else None))
        if voiced and self._started_sent:
            self._note_ongoing()
            yield from self._probe()
            yield from self._interim()
        turn_ms = len(self._speech) * CHUNK_MS
        if turn_ms >= self.settings.max_speech_ms:
            yield from self._end_turn(manual=False)
            return
        yield from self._carry_out(self.turns.silence(self._silence_run_ms, self._turn_rules(), time.monotonic(),
                                                      started=self._started_sent))
        if not self._in_speech:
            return  # the turn ended
        if self._should_speculate():
            # A pause that may end the turn: let the STT (and the response) start now, so that
            # by the end of the silence window the work is done or well under way.
            end_ms = _ms(self._speech[-1].offset + VAD_CHUNK)
            yield replace(self._utterance(self._speech, self._item_id, manual=False, end_ms=end_ms),
                          speculation=self.turns.speculate())
            if self._detects_turns() and self.turns.ask(time.monotonic()):
                # The detector hears the pause as it will sound at --turn_pause_ms, now: its verdict
                # is then in by the time the reply is, instead of after it (and off the LLM's core).
                self._ask_detector()

    def _interim(self) -> Iterator[Utterance]:
        """The speech so far, after every ``--interim_transcript_ms`` more of voice: the STT transcribes it
        while the user goes on (when nothing newer of the turn waits), for the live transcript and so that
        the LLM reads the words ahead of the pause."""
        every = self.turn_settings.interim_transcript_ms
        if not every or self._voiced_ms - self._interim_at_ms < every:
            return
        self._interim_at_ms = self._voiced_ms
        end_ms = _ms(self._speech[-1].offset + VAD_CHUNK)
        yield replace(self._utterance(self._speech, self._item_id, manual=False, end_ms=end_ms), interim=True)

    def _probe_asked(self, item: ProbeSpeech) -> Iterator[Utterance]:
        """The service judges this speech by its words: it gets the speech so far now, or once it has
        ``min_new_ms`` more voice than at the last probe."""
        if not self._in_speech or item.item_id != self._item_id:
            return
        self._probe_due_ms = self._probed_at_ms + item.min_new_ms
        yield from self._probe()

    def _probe(self) -> Iterator[Utterance]:
        due = self._probe_due_ms
        if due is None or self._voiced_ms < due:
            return
        self._probe_due_ms = None
        # The next interim pass counts from here: the probe gave the same words.
        self._probed_at_ms = self._interim_at_ms = self._voiced_ms
        end_ms = _ms(self._speech[-1].offset + VAD_CHUNK)
        yield replace(self._utterance(self._speech, self._item_id, manual=False, end_ms=end_ms), interim=True,
                      probe=True)

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

    def _turn_rules(self) -> TurnRules:
        td = self.context.config.current.turn_detection
        take_back_ms = self.turn_settings.take_back_within_ms if td is None or td.interrupt_response else 0
        return TurnRules(judges=self._detects_turns(), silence_ms=self._silence_ms(),
                         turn_pause_ms=self.turn_settings.pause_ms,
                         finished_pause_ms=self.turn_settings.finished_pause_ms,
                         max_turn_silence_ms=self.turn_settings.max_turn_silence_ms, level=eagerness(td),
                         take_back_ms=take_back_ms)

    def _carry_out(self, answer: Answer) -> Iterator[Any]:
        """Do what the turn controller answered."""
        if answer.ask:
            self._ask_detector()
        if answer.report is not None:
            self.emit_event(self._decision(answer.report))
        if answer.end:
            decision = self._decision(answer.decision) if answer.decision is not None else None
            yield from self._end_turn(manual=False, decision=decision)

    def _ask_detector(self) -> None:
        assert self.turn_detector is not None
        samples = paused_for(self._speech, self.turn_settings.pause_ms - self._silence_run_ms)[-WINDOW_SAMPLES:]
        item_id, pause = self._item_id, self.turns.pause
        self.turn_detector.ask(samples, item_id=item_id, pause=pause, reply_to=self.queue_in,
                               still_wanted=lambda: self._item_id == item_id and self.turns.is_current(pause))

    def _judge(self, verdict: TurnVerdict) -> Iterator[Any]:
        """The detector's answer about a pause (ignored if speech resumed or the turn ended meanwhile)."""
        if self._in_speech and verdict.item_id == self._item_id:
            yield from self._carry_out(self.turns.verdict(verdict, self._turn_rules(), time.monotonic()))

    def _heard(self, item: SpeculativeTranscript) -> Iterator[Any]:
        """The words of a pause's speculative STT pass (the service hands them back)."""
        if self._in_speech and item.item_id == self._item_id:
            yield from self._carry_out(self.turns.words(item.speculation, item.transcript, item.continuation,
                                                        self._turn_rules(), time.monotonic(), item.language))

    def _reply_ready(self, item: ReplyReady) -> Iterator[Any]:
        """The speculative reply to a pause's words can play (or none will come): a finished turn may end."""
        if self._in_speech and item.item_id == self._item_id:
            yield from self._carry_out(self.turns.reply_ready(item.speculation, self._turn_rules()))

    def _decision(self, judgement: Judgement) -> TurnDecision:
        return judgement.decision(self._item_id, self.turn_detector.name if self.turn_detector is not None else SILENCE)

    # ------------------------------------------------------------ speculation

    def _void_speculations(self) -> None:
        """The turn will not end as itself: what was speculated on it must not be answered."""
        if self.turns.speculation:
            self.emit_event(SpeculationVoided(self._item_id, self.turns.speculation))

    def _should_speculate(self) -> bool:
        after = self.turn_settings.speculation_silence_ms
        config = self.context.config.current
        td = config.turn_detection
        return (
            after > 0
            and self._started_sent
            and not self.turns.speculation_stands
            and self._silence_run_ms >= after
            and td is not None
            and td.create_response
        )

    def _end_turn(self, manual: bool, decision: TurnDecision | None = None) -> Iterator[Any]:
        speech, started, item_id = self._speech, self._started_sent, self._item_id
        speech_ms, voice_end, voiced_at = self._speech_ms(), self._voice_end, self._voiced_at
        voiced = self.user.voiced
        reuses = self.turns.speculation if self.turns.speculation_stands else 0
        # Keep only a pad's worth of the trailing silence, so the last word stays whole.
        trailing = max(0, self._silence_run_ms - self._pad_ms()) // CHUNK_MS
        self._in_speech = False
        self._speech = []
        self._started_sent = False
        self._voiced_ms = 0
        self._silence_run_ms = 0
        self._item_id = None
        self._reset_voice()
        self.turns = TurnController()
        if not started:
            return  # too short to be a turn: a click or a cough
        self._last_turn = None if manual or item_id is None else (item_id, voice_end)
        kept = speech[: max(len(speech) - trailing, 1)]
        end_ms = _ms(kept[-1].offset + VAD_CHUNK)
        if decision is not None:
            self.emit_event(decision)
        self.emit_event(SpeechStopped(end_ms, item_id=item_id, speech_ms=speech_ms))
        # The speech ended when its last voiced audio came in: the user's time, whatever pace the audio came at.
        yield replace(self._utterance(kept, item_id, manual=manual, end_ms=end_ms), reuses=reuses,
                      ended=TurnEnd(time.monotonic(), voiced_at))
        self.user.learn(voiced)  # once the utterance is on its way to the STT

    def _utterance(self, chunks: list[AudioChunk], item_id: str | None, *, manual: bool, end_ms: int) -> Utterance:
        samples = np.concatenate([c.samples for c in chunks]) if chunks else np.zeros(0, np.float32)
        return Utterance(
            samples=samples,
            audio_start_ms=_ms(chunks[0].offset) if chunks else end_ms,
            audio_end_ms=end_ms,
            item_id=item_id,
            manual=manual,
            ended=TurnEnd.now(),
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
