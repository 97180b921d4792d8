"""A turn the detector judges finished ends once its reply is ready to play (``ReplyReady``).

The VAD's ``process`` is driven chunk by chunk, with a detector that answers
only when the test says, and the words and ReplyReady the service would hand
back delivered at chosen moments.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.messages.input_audio import (
    AudioChunk,
    SpeculationVoided,
    SpeechStarted,
    SpeechStopped,
    Utterance,
)
from speech_to_speech.pipeline.messages.transcription import SpeculativeTranscript
from speech_to_speech.pipeline.messages.turn_taking import ReplyReady, TurnDecision, TurnVerdict
from speech_to_speech.pipeline.session_config import ConfigHolder, RuntimeConfig, TurnDetection
from speech_to_speech.testing.engine import backend_settings, scripted_settings
from speech_to_speech.testing.scripted import EnergyVAD

CHUNK_MS = 32
PAUSE_MS, SILENCE_MS, MAX_SILENCE_MS = 192, 480, 2000
WORDS = "Well, let me think."


@dataclass
class Detector:
    """Records the pauses it is asked about; the test answers."""

    name: str = "smart-turn"
    asks: list[tuple[str | None, int]] = field(default_factory=list)
    heard: list[Any] = field(default_factory=list)  # the audio of each question

    def ask(self, samples: Any, *, item_id: str | None, pause: int, still_wanted: Any,
            reply_to: queue.Queue[Any]) -> None:
        self.asks.append((item_id, pause))
        self.heard.append(samples)


class Turn:
    """One semantic_vad session's VAD, and everything it produced so far."""

    def __init__(self, turn_detection: TurnDetection | None = None, finished_pause_ms: int = PAUSE_MS) -> None:
        config = RuntimeConfig(turn_detection=turn_detection or TurnDetection(type="semantic_vad"))
        self.detector = Detector()
        self.events: queue.Queue[Any] = queue.Queue()
        self.vad = EnergyVAD(
            HandlerContext(CancelScope(), ConfigHolder(config)), queue.Queue(), queue.Queue(), model=None,
            **backend_settings(EnergyVAD, scripted_settings(
                min_speech_ms=96, min_silence_ms=SILENCE_MS, speech_pad_ms=96,
                speculation_silence_ms=64, turn_pause_ms=PAUSE_MS,
                finished_pause_ms=finished_pause_ms, max_turn_silence_ms=MAX_SILENCE_MS)),
            events=self.events, turn_detector=self.detector)  # type: ignore[arg-type]
        self.offset = 0
        self.out: list[Any] = []

    def send(self, item: Any) -> list[Any]:
        out = list(self.vad.process(item))
        produced = []
        while not self.events.empty():
            produced.append(self.events.get_nowait())
        produced += out
        self.out += produced
        return produced

    def chunks(self, n: int, voiced: bool) -> list[Any]:
        produced: list[Any] = []
        for _ in range(n):
            produced += self.send(AudioChunk(np.full(VAD_CHUNK, 0.3 if voiced else 0.0, np.float32), self.offset))
            self.offset += VAD_CHUNK
        return produced

    @property
    def item_id(self) -> str:
        started = [i for i in self.out if isinstance(i, SpeechStarted)]
        assert started[-1].item_id is not None
        return started[-1].item_id

    @property
    def speculation(self) -> int:
        return [i for i in self.out if isinstance(i, Utterance) and i.speculative][-1].speculation

    def pause_judged_finished(self, words: str = WORDS, probability: float = 0.9,
                              continuation: float | None = None) -> list[Any]:
        """Speech, then silence until the detector is asked; the words come, and a verdict (finished by default)."""
        self.chunks(12, voiced=True)
        self.chunks(PAUSE_MS // CHUNK_MS, voiced=False)  # the speculation went out at 64 ms
        self.send(SpeculativeTranscript(self.item_id, words, self.speculation, continuation))
        item_id, pause = self.detector.asks[-1]
        return self.send(TurnVerdict(item_id, pause, probability, 40.0))

    def ready(self, speculation: int | None = None, item_id: str | None = None) -> list[Any]:
        return self.send(ReplyReady(item_id or self.item_id, self.speculation if speculation is None else speculation))

    def stops(self) -> list[SpeechStopped]:
        return [i for i in self.out if isinstance(i, SpeechStopped)]


def kinds(items: list[Any]) -> list[type]:
    return [type(i) for i in items]


def outcome(turn: Turn) -> str:
    return [d for d in turn.out if isinstance(d, TurnDecision)][-1].outcome


def test_a_finished_turn_whose_reply_is_already_ready_ends_at_the_verdict() -> None:
    turn = Turn()
    turn.chunks(12, voiced=True)
    turn.chunks(PAUSE_MS // CHUNK_MS, voiced=False)
    turn.send(SpeculativeTranscript(turn.item_id, WORDS, turn.speculation))
    assert turn.ready() == []  # ready before the verdict: nothing to end yet
    item_id, pause = turn.detector.asks[-1]
    ended = turn.send(TurnVerdict(item_id, pause, 0.9, 40.0))
    assert kinds(ended) == [TurnDecision, SpeechStopped, Utterance]
    assert ended[0].outcome == "finished" and ended[2].reuse_speculation


@pytest.mark.parametrize("ready_first", [True, False], ids=["reply ready first", "pause long enough first"])
def test_a_finished_turn_with_its_reply_ready_waits_out_a_pause_between_two_sentences(ready_first: bool) -> None:
    turn = Turn(finished_pause_ms=PAUSE_MS + 4 * CHUNK_MS)
    if ready_first:
        turn.chunks(12, voiced=True)
        turn.chunks(PAUSE_MS // CHUNK_MS, voiced=False)
        turn.send(SpeculativeTranscript(turn.item_id, WORDS, turn.speculation))
        assert turn.ready() == []
        item_id, pause = turn.detector.asks[-1]
        assert turn.send(TurnVerdict(item_id, pause, 0.9, 40.0)) == []  # finished and ready, but too soon
    else:
        assert turn.pause_judged_finished() == []
    assert turn.chunks(3, voiced=False) == []  # a second sentence that starts now keeps the turn whole
    if ready_first:
        ended = turn.chunks(1, voiced=False)  # the pause is long enough now
    else:
        assert turn.chunks(1, voiced=False) == []  # long enough, but its reply is not ready
        ended = turn.ready()
    assert kinds(ended) == [TurnDecision, SpeechStopped, Utterance] and ended[0].outcome == "finished"


def test_at_eagerness_high_a_finished_turn_ends_as_soon_as_its_reply_is_ready() -> None:
    turn = Turn(TurnDetection(type="semantic_vad", eagerness="high"), finished_pause_ms=PAUSE_MS + 4 * CHUNK_MS)
    assert turn.pause_judged_finished() == []
    ended = turn.ready()  # at --turn_pause_ms: it answers sooner, and may answer a first sentence
    assert kinds(ended) == [TurnDecision, SpeechStopped, Utterance] and ended[0].outcome == "finished"


def test_speech_within_the_finished_pause_keeps_the_turn_whole() -> None:
    turn = Turn(finished_pause_ms=PAUSE_MS + 4 * CHUNK_MS)
    assert turn.pause_judged_finished() == [] and turn.ready() == []
    first = turn.item_id
    turn.chunks(2, voiced=False)
    assert not any(isinstance(i, SpeechStopped) for i in turn.chunks(6, voiced=True))  # the second sentence
    assert turn.item_id == first and turn.stops() == []


def test_a_finished_turn_waits_for_its_reply_and_ends_when_it_is_ready() -> None:
    turn = Turn()
    assert turn.pause_judged_finished() == []  # judged finished, but nothing could play yet
    assert turn.chunks(3, voiced=False) == []
    ended = turn.ready()
    assert kinds(ended) == [TurnDecision, SpeechStopped, Utterance]
    assert ended[0].outcome == "finished"
    assert turn.chunks(20, voiced=False) == []  # it ended once


def test_speech_that_resumes_before_the_reply_is_ready_keeps_the_turn_whole() -> None:
    turn = Turn()
    turn.pause_judged_finished()
    first_item, first_speculation = turn.item_id, turn.speculation
    resumed = turn.chunks(10, voiced=True)  # "What is the capital of Australia?"
    assert SpeculationVoided(first_item, first_speculation) in resumed
    assert turn.ready(first_speculation, first_item) == []  # the reply to the words the user went past
    assert kinds(turn.chunks(PAUSE_MS // CHUNK_MS, voiced=False)) == [Utterance]  # the next speculation
    assert turn.stops() == [] and not any(isinstance(i, TurnDecision) for i in turn.out)
    # The turn goes on as one, and ends after its second sentence.
    turn.send(SpeculativeTranscript(first_item, "Well, let me think. What is the capital of Australia?",
                                    turn.speculation))
    item_id, pause = turn.detector.asks[-1]
    turn.send(TurnVerdict(item_id, pause, 0.9, 40.0))
    ended = turn.ready()
    assert kinds(ended) == [TurnDecision, SpeechStopped, Utterance]
    assert len(turn.stops()) == 1 and turn.stops()[0].item_id == first_item


def test_a_reply_that_never_gets_ready_lets_the_silence_window_end_the_turn() -> None:
    turn = Turn()
    turn.pause_judged_finished()
    waited = PAUSE_MS // CHUNK_MS
    ended: list[Any] = []
    while not ended:
        ended = turn.chunks(1, voiced=False)
        waited += 1
        assert waited * CHUNK_MS <= SILENCE_MS
    assert waited * CHUNK_MS >= SILENCE_MS  # the server_vad rule's window, not sooner
    assert kinds(ended) == [TurnDecision, SpeechStopped, Utterance]
    assert ended[0].outcome == "finished"


@pytest.mark.parametrize("stale", ["earlier speculation", "other turn"])
def test_a_stale_reply_ready_is_ignored(stale: str) -> None:
    turn = Turn()
    turn.pause_judged_finished()
    if stale == "earlier speculation":
        assert turn.ready(turn.speculation - 1) == []
    else:
        assert turn.ready(item_id="item_gone") == []
    assert turn.stops() == []
    assert kinds(turn.ready()) == [TurnDecision, SpeechStopped, Utterance]  # the current one still counts


def test_a_reply_ready_after_the_turn_ended_changes_nothing() -> None:
    turn = Turn()
    turn.pause_judged_finished()
    turn.ready()
    assert turn.ready() == [] and turn.chunks(20, voiced=False) == []
    assert len(turn.stops()) == 1


def test_a_turn_without_a_speculation_ends_at_the_verdict() -> None:
    """Without automatic responses nothing is speculated: there is no reply to wait for."""
    turn = Turn(TurnDetection(type="semantic_vad", create_response=False))
    turn.chunks(12, voiced=True)
    turn.chunks(PAUSE_MS // CHUNK_MS, voiced=False)
    item_id, pause = turn.detector.asks[-1]
    assert kinds(turn.send(TurnVerdict(item_id, pause, 0.9, 40.0))) == [TurnDecision, SpeechStopped, Utterance]


def test_unfinished_turns_are_not_ended_by_a_ready_reply() -> None:
    turn = Turn()
    turn.chunks(12, voiced=True)
    turn.chunks(PAUSE_MS // CHUNK_MS, voiced=False)
    turn.send(SpeculativeTranscript(turn.item_id, "I need a present for my", turn.speculation))
    item_id, pause = turn.detector.asks[-1]
    turn.send(TurnVerdict(item_id, pause, 0.2, 40.0))
    assert turn.ready() == []
    assert turn.chunks(SILENCE_MS // CHUNK_MS, voiced=False) == []  # it waits for more speech
    assert outcome(turn) == "unfinished"


def test_server_vad_turns_ignore_reply_ready() -> None:
    turn = Turn(TurnDetection(type="server_vad"))
    turn.chunks(12, voiced=True)
    turn.chunks(4, voiced=False)
    assert turn.ready() == []
    ended: list[Any] = []
    silent = 4
    while not ended:
        ended = turn.chunks(1, voiced=False)
        silent += 1
    assert silent * CHUNK_MS >= SILENCE_MS and kinds(ended) == [SpeechStopped, Utterance]


# ---------------------------------------------------------------- any order of verdict, words, ready and speech

MOMENT = st.one_of(st.none(), st.integers(2, 20))


@settings(max_examples=300, deadline=None)
@given(verdict_at=MOMENT, probability=st.sampled_from([0.2, 0.9]), words_at=MOMENT,
       words=st.sampled_from([WORDS, "I need a present for my"]), ready_at=MOMENT, resume_at=MOMENT)
def test_a_turn_judged_finished_ends_once_as_soon_as_its_reply_is_ready_and_never_before(
        verdict_at: int | None, probability: float, words_at: int | None, words: str, ready_at: int | None,
        resume_at: int | None) -> None:
    """Verdict, words, ReplyReady and resumed speech come in any order, at any moment of the pause."""
    turn = Turn()
    turn.chunks(12, voiced=True)
    item_id = turn.item_id
    sent: dict[str, int] = {}  # what went in about this pause, at which silence (ms)
    stopped_at: int | None = None  # the silence at which the turn stopped
    stopped_ready = False  # whether its reply was ready then

    def deliver(name: str, item: Any, silence_ms: int) -> None:
        nonlocal stopped_at, stopped_ready
        before = len(turn.stops())
        if name == "chunk":
            turn.chunks(1, voiced=False)
        else:
            turn.send(item)
            sent[name] = silence_ms
        if len(turn.stops()) > before and stopped_at is None:
            stopped_at, stopped_ready = silence_ms, "ready" in sent

    for n in range(24):
        if n == resume_at and stopped_at is None:
            assert SpeculationVoided in kinds(turn.chunks(4, voiced=True))  # the user goes on
            assert turn.stops() == []
            break
        if n == words_at:
            deliver("words", SpeculativeTranscript(item_id, words, turn.speculation), n * CHUNK_MS)
        if n == verdict_at and turn.detector.asks:
            deliver("verdict", TurnVerdict(*turn.detector.asks[-1], probability, 40.0), n * CHUNK_MS)
        if ready_at is not None and n >= ready_at and "words" in sent and "ready" not in sent:
            deliver("ready", ReplyReady(item_id, turn.speculation), n * CHUNK_MS)
        deliver("chunk", None, (n + 1) * CHUNK_MS)
    decisions = [d.outcome for d in turn.out if isinstance(d, TurnDecision)]
    if stopped_at is not None and decisions[-1] == "finished":
        assert stopped_ready or stopped_at >= SILENCE_MS, f"ended at {stopped_at} ms, its reply not ready"
    judged_finished = probability > 0.5 and words == WORDS and {"words", "verdict"} <= sent.keys()
    if judged_finished and "ready" in sent and max(sent.values()) < SILENCE_MS:
        # The detector is asked as the pause begins; the turn still lasts --turn_pause_ms at least.
        assert stopped_at == max(*sent.values(), PAUSE_MS), \
            "the last of verdict, words, reply and the shortest pause ends it, at once"
    if stopped_at is not None and decisions[-1] == "finished":
        assert stopped_at >= PAUSE_MS, f"a finished turn ended {stopped_at} ms into its pause"
    # Liveness: whatever came or not, silence ends the turn, once.
    turn.chunks(MAX_SILENCE_MS // CHUNK_MS + 1, voiced=False)
    assert len([s for s in turn.stops() if s.item_id == item_id]) == 1


def test_the_detector_hears_the_pause_as_it_begins_padded_to_the_shortest_pause() -> None:
    """Asked with the speculation (64 ms into the pause), it gets the pause made --turn_pause_ms long."""
    turn = Turn()
    turn.chunks(12, voiced=True)
    turn.chunks(1, voiced=False)
    assert turn.detector.asks == []
    noise = np.full(VAD_CHUNK, 0.001, np.float32)  # a quiet room, not digital silence
    turn.send(AudioChunk(noise, turn.offset))
    turn.offset += VAD_CHUNK
    assert turn.detector.asks == [(turn.item_id, turn.detector.asks[0][1])]
    heard = turn.detector.heard[0]
    speech = 12 * VAD_CHUNK  # with the turn's prefix pad of silent chunks (they came before the speech)
    assert len(heard) >= speech + PAUSE_MS * 16
    pause = heard[-PAUSE_MS * 16:]
    assert np.all(np.abs(pause) < 0.01), "the padded pause is the pause's own quiet"
    assert np.count_nonzero(pause == np.float32(0.001)) >= len(pause) - VAD_CHUNK  # its last chunk, repeated
    assert np.all(heard[-PAUSE_MS * 16 - speech: -PAUSE_MS * 16 - VAD_CHUNK] == np.float32(0.3))
    turn.chunks(PAUSE_MS // CHUNK_MS, voiced=False)
    assert len(turn.detector.asks) == 1, "one question per pause"


def test_a_turn_judged_finished_early_ends_only_once_the_pause_is_long_enough() -> None:
    turn = Turn()
    turn.chunks(12, voiced=True)
    turn.chunks(2, voiced=False)  # the speculation and the question go out at 64 ms
    turn.send(SpeculativeTranscript(turn.item_id, WORDS, turn.speculation))
    item_id, pause = turn.detector.asks[-1]
    assert turn.send(TurnVerdict(item_id, pause, 0.9, 40.0)) == []
    assert turn.ready() == []  # words, verdict and reply all in at 64 ms of silence
    silent = 2
    ended: list[Any] = []
    while not ended:
        ended = turn.chunks(1, voiced=False)
        silent += 1
    assert silent * CHUNK_MS == PAUSE_MS  # not before the shortest pause, and not after it
    assert kinds(ended) == [TurnDecision, SpeechStopped, Utterance] and ended[0].outcome == "finished"


def test_speech_inside_the_shortest_pause_keeps_a_turn_judged_finished_early_whole() -> None:
    turn = Turn()
    turn.chunks(12, voiced=True)
    turn.chunks(2, voiced=False)
    first = turn.item_id
    turn.send(SpeculativeTranscript(first, WORDS, turn.speculation))
    turn.send(TurnVerdict(*turn.detector.asks[-1], 0.9, 40.0))
    turn.ready()
    turn.chunks(2, voiced=False)  # 128 ms: not yet a pause that may end a turn
    turn.chunks(6, voiced=True)  # "What is the capital of Australia?"
    assert turn.stops() == [] and turn.item_id == first
    turn.chunks(PAUSE_MS // CHUNK_MS, voiced=False)
    assert len(turn.detector.asks) == 2  # the new pause is asked about afresh


def test_words_that_do_not_read_finished_need_a_confident_score() -> None:
    """Cut mid-sentence, Smart Turn scored "… do I need for" 0.97: the words keep that turn open."""
    hanging = "How many cups of flour do I need for?"
    doubted = Turn()
    doubted.pause_judged_finished(hanging, probability=0.97)
    doubted.ready()
    doubted.chunks(SILENCE_MS // CHUNK_MS, voiced=False)  # past the silence rule's window
    assert outcome(doubted) == "unfinished" and doubted.stops() == []
    first = doubted.item_id
    doubted.chunks(6, voiced=True)  # "… baking cookies?"
    assert doubted.item_id == first and doubted.stops() == []  # one turn still

    sure = Turn()
    sure.pause_judged_finished(hanging, probability=0.99)
    sure.ready()
    assert outcome(sure) == "finished" and len(sure.stops()) == 1


def test_a_sentence_the_stt_doubts_keeps_a_turn_that_sounds_unfinished_open() -> None:
    """ "I was reading about black holes [and]": Smart Turn heard it unfinished (0.02), Whisper wrote a full
    stop with the "and" close behind it. Trusting the full stop split that request at the silence window."""
    words = "I was reading about black holes."
    trusted = Turn()
    trusted.pause_judged_finished(words, probability=0.02, continuation=0.05)
    trusted.ready()
    trusted.chunks(SILENCE_MS // CHUNK_MS, voiced=False)
    assert outcome(trusted) == "disputed" and len(trusted.stops()) == 1

    doubted = Turn()
    doubted.pause_judged_finished(words, probability=0.02, continuation=0.56)
    doubted.ready()
    doubted.chunks(SILENCE_MS // CHUNK_MS + 8, voiced=False)  # well past the silence window
    assert outcome(doubted) == "unfinished" and doubted.stops() == []
    decision = [d for d in doubted.out if isinstance(d, TurnDecision)][-1]
    assert decision.continuation == 0.56 and decision.words == words
    first = doubted.item_id
    doubted.chunks(6, voiced=True)  # "… and I wonder what is inside them."
    assert doubted.item_id == first and doubted.stops() == []
    doubted.chunks(MAX_SILENCE_MS // CHUNK_MS + 1, voiced=False)  # and at worst it ends after the longest silence
    assert len(doubted.stops()) == 1


def test_a_whole_sentence_needs_only_the_usual_score() -> None:
    turn = Turn()
    turn.pause_judged_finished("How many cups of flour do I need for cookies?", probability=0.6)
    turn.ready()
    assert outcome(turn) == "finished" and len(turn.stops()) == 1
