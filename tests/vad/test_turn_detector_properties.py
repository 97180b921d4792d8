"""Invariants of turn-taking with a turn detector, over generated sequences of speech, silence,
late and early verdicts, speculative words, replies getting ready (ReplyReady), clears and commits.

The VAD's ``process`` is driven directly, chunk by chunk; the detector is a
recorder whose verdicts the test delivers whenever the sequence says, so every
interleaving of audio and answers a real pool could produce is reachable.
"""

from __future__ import annotations

import os
import queue
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.messages.input_audio import (
    AudioChunk,
    ClearInput,
    CommitInput,
    SpeechStarted,
    SpeechStopped,
    Utterance,
)
from speech_to_speech.pipeline.messages.transcription import SpeculativeTranscript
from speech_to_speech.pipeline.messages.turn_taking import ReplyReady, TurnDecision, TurnVerdict
from speech_to_speech.pipeline.session_config import ConfigHolder, RuntimeConfig, TurnDetection
from speech_to_speech.testing.engine import backend_settings, scripted_settings
from speech_to_speech.testing.scripted import EnergyVAD
from speech_to_speech.vad.turn_detector import EAGERNESS, ends_mid_phrase, reads_finished

CHUNK_MS = 32
PAUSE_MS, MAX_SILENCE_MS, SILENCE_MS = 192, 960, 480
FINISHED_PAUSE_MS = 320  # between the pause judged on and the silence window
EXAMPLES = int(os.environ.get("S2S_PROPERTY_EXAMPLES", "400"))
WORDS = ("What is twelve times fifteen?", "I need a present for my", "", "Turn it up, um",
         "How do I say thank you in")


@dataclass
class Ask:
    item_id: str | None
    pause: int


@dataclass
class Detector:
    """Records what the VAD asks; answers only when the test says."""

    name: str = "smart-turn"
    asks: list[Ask] = field(default_factory=list)

    def ask(self, samples: Any, *, item_id: str | None, pause: int, still_wanted: Any,
            reply_to: queue.Queue[Any]) -> None:
        assert len(samples) > 0
        self.asks.append(Ask(item_id, pause))


SPEECH = st.tuples(st.just("speech"), st.integers(1, 12))
# A pause: its length in chunks, and after how many of them the detector's answer about it (and the
# words of its speculative pass) arrive, if they do at all.
# The detector is asked after PAUSE_MS (6 chunks); its answer comes mostly soon after, at times never.
ANSWER_AT = st.one_of(st.integers(6, 12), st.integers(6, 12), st.integers(0, 40))
VERDICT = st.tuples(ANSWER_AT, st.one_of(st.none(), st.floats(0.0, 1.0), st.floats(0.9, 1.0)))
# The words, and the STT's doubt that they end there (None: a backend that does not measure it).
HEARD = st.tuples(ANSWER_AT, st.sampled_from(WORDS), st.one_of(st.none(), st.floats(0.0, 1.0)))
# When the speculative reply to the pause's words is ready to play (the service says so once the words came).
READY = st.one_of(st.integers(0, 12), st.integers(0, 40))
PAUSE = st.tuples(st.just("pause"), st.integers(1, 40), st.one_of(VERDICT, VERDICT, st.none()),
                  st.one_of(HEARD, HEARD, st.none()), st.one_of(READY, READY, st.none()))
# An answer about an earlier pause, arriving late.
LATE_VERDICT = st.tuples(st.just("late"), st.integers(1, 3), st.one_of(st.none(), st.floats(0.0, 1.0)))
step = st.one_of(SPEECH, PAUSE, SPEECH, PAUSE, LATE_VERDICT,
                 st.tuples(st.just("stale_words"), st.sampled_from(WORDS)),
                 st.tuples(st.just("stale_ready"), st.integers(-2, 0)),
                 st.tuples(st.just("clear")), st.tuples(st.just("commit")))


class Run:
    """The VAD under test and the invariants checked as its output comes."""

    def __init__(self, eagerness: str, speculation_ms: int) -> None:
        config = RuntimeConfig(turn_detection=TurnDetection(type="semantic_vad", eagerness=eagerness))
        self.detector = Detector()
        self.vad = EnergyVAD(
            HandlerContext(CancelScope(), ConfigHolder(config)), queue.Queue(), queue.Queue(), model=None,
            **backend_settings(EnergyVAD, scripted_settings(
                min_speech_ms=96, min_silence_ms=SILENCE_MS, speech_pad_ms=96,
                speculation_silence_ms=speculation_ms, turn_pause_ms=PAUSE_MS,
                finished_pause_ms=FINISHED_PAUSE_MS,
                max_turn_silence_ms=MAX_SILENCE_MS)),
            events=queue.Queue(), turn_detector=self.detector)  # type: ignore[arg-type]
        self.threshold = EAGERNESS[eagerness].finished_at
        self.unread_threshold = EAGERNESS[eagerness].unread_finished_at
        self.max_silence_ms = int(MAX_SILENCE_MS * EAGERNESS[eagerness].max_silence_scale)
        self.waits_between_sentences = EAGERNESS[eagerness].waits_between_sentences
        self.take_back_ms = self.vad.turn_settings.take_back_within_ms
        self.offset = 0
        self.open_item: str | None = None  # the turn that started and has not stopped
        self.silence_ms = 0  # since the last voiced chunk of the open turn
        self.speculation = 0  # number of the last speculative utterance of the open turn
        self.last_decision: TurnDecision | None = None
        self.speculated = False  # a speculative utterance went out since the last voiced chunk
        self.ready: tuple[str | None, int] | None = None  # the (turn, speculation) whose reply is ready

    def send(self, item: Any) -> list[Any]:
        out = list(self.vad.process(item))
        events = []
        while not self.vad.events.empty():  # type: ignore[union-attr]
            events.append(self.vad.events.get_nowait())  # type: ignore[union-attr]
        for produced in events + out:
            self.check(produced, manual=isinstance(item, CommitInput))
        return events + out

    def chunk(self, voiced: bool) -> None:
        samples = np.full(VAD_CHUNK, 0.3 if voiced else 0.0, dtype=np.float32)
        self.send(AudioChunk(samples, self.offset))
        self.offset += VAD_CHUNK
        if self.open_item is not None:
            self.silence_ms = 0 if voiced else self.silence_ms + CHUNK_MS
        if voiced:
            self.speculated = False

    def check(self, produced: Any, manual: bool) -> None:
        if isinstance(produced, SpeechStarted):
            assert self.open_item is None, "a turn started inside another"
            self.open_item, self.silence_ms, self.speculation = produced.item_id, 0, 0
        elif isinstance(produced, TurnDecision):
            self.last_decision = produced
            assert produced.item_id is not None
            if produced.outcome == "disputed":  # sounded unfinished, read as a whole sentence
                assert produced.probability is not None and produced.probability < self.threshold
                assert reads_finished(produced.words or "", produced.continuation)
            if produced.outcome == "finished":
                assert produced.probability is not None and produced.probability >= self.threshold
                assert not ends_mid_phrase(produced.words or "")
                if produced.words and not reads_finished(produced.words, produced.continuation):
                    assert produced.probability >= self.unread_threshold, "ended on words left hanging"
                # The words of a speculative pass of this pause were weighed before deciding.
                assert produced.words is not None or not self.speculated
        elif isinstance(produced, SpeechStopped):
            assert produced.item_id == self.open_item, "a turn stopped that was not open"
            if not manual:
                # The silence that ended it, counting the chunk being processed.
                silence = self.silence_ms + CHUNK_MS
                decision = self.last_decision if self.last_decision and \
                    self.last_decision.item_id == produced.item_id else None
                assert decision is not None and decision.outcome != "unfinished", "ended with no decision"
                cap = min(SILENCE_MS, self.max_silence_ms)
                # A finished turn waits out a pause between two sentences of one request, unless the silence
                # window comes first.
                finished = max(PAUSE_MS, FINISHED_PAUSE_MS) if self.waits_between_sentences else PAUSE_MS
                # A disputed turn (unfinished to the detector, whole to its words) ends as a finished one where
                # its reply is taken back on any speech the silence window would have waited for; else that
                # window ends it.
                disputed = min(finished, cap) if self.take_back_ms >= SILENCE_MS else SILENCE_MS
                floor = {"finished": min(finished, cap), "timed_out": self.max_silence_ms,
                         "no_answer": SILENCE_MS, "disputed": disputed}[decision.outcome]
                assert silence >= floor, f"{decision.outcome} after {silence} ms of silence"
                if decision.outcome == "finished" and self.speculated:
                    # A finished turn ends once its reply can play, or at the silence window.
                    assert self.ready == (produced.item_id, self.speculation) or silence >= cap, \
                        f"finished after {silence} ms, its reply not ready"
            self.open_item, self.speculated = None, False
        elif isinstance(produced, Utterance) and produced.speculative:
            assert produced.item_id == self.open_item
            self.speculation, self.speculated = produced.speculation, True

    def stale_or_current_ask(self, back: int) -> Ask | None:
        asks = self.detector.asks
        return asks[-1 - back] if back < len(asks) else None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, max_size=40), eagerness=st.sampled_from(sorted(EAGERNESS)),
       speculation_ms=st.sampled_from([0, 64]))
# A whole sentence the detector doubts, its reply ready at once: disputed, and ended at the finished pause.
@example(steps=[("speech", 3), ("pause", 10, (6, 0.0), (6, "What is twelve times fifteen?", None), 0)],
         eagerness="auto", speculation_ms=64)
def test_turns_end_only_when_judged_finished_or_silent_long_enough_and_always_end(
        steps: list[tuple[Any, ...]], eagerness: str, speculation_ms: int) -> None:
    run = Run(eagerness, speculation_ms)
    for kind, *args in steps:
        if kind == "speech":
            for _ in range(args[0]):
                run.chunk(voiced=True)
        elif kind == "pause":
            length, verdict, words, ready = args
            heard = False
            for n in range(length):
                if verdict is not None and verdict[0] == n and run.detector.asks:
                    ask = run.detector.asks[-1]
                    run.send(TurnVerdict(ask.item_id, ask.pause, verdict[1], 40.0))
                if words is not None and words[0] == n:
                    run.send(SpeculativeTranscript(run.open_item, words[1], run.speculation, words[2]))
                    heard = True
                if ready is not None and ready <= n and heard and run.ready != (run.open_item, run.speculation):
                    run.ready = (run.open_item, run.speculation)
                    run.send(ReplyReady(run.open_item, run.speculation))
                run.chunk(voiced=False)
                if run.open_item is not None:
                    # Liveness: however the detector answers (or not), silence ends a turn in time.
                    assert run.silence_ms < run.max_silence_ms, "a turn outlived the longest silence"
        elif kind == "late":
            ask = run.stale_or_current_ask(args[0])
            if ask is not None:
                run.send(TurnVerdict(ask.item_id, ask.pause, args[1], 40.0))
        elif kind == "stale_ready":
            run.send(ReplyReady(run.open_item, run.speculation + args[0] - 1))
        elif kind == "stale_words":
            run.send(SpeculativeTranscript(run.open_item, args[0], run.speculation - 1))
        elif kind == "clear":
            run.send(ClearInput())
            run.open_item = None
        else:
            run.send(CommitInput())
            run.open_item = None
    # Every pause the detector was asked about belonged to a turn, once per pause.
    pauses = [(a.item_id, a.pause) for a in run.detector.asks]
    assert len(pauses) == len(set(pauses))
    assert all(item_id is not None for item_id, _ in pauses)
