"""Turn tracking of the VAD base class, driven through the scripted energy VAD.

The handler's ``process`` is called directly, chunk by chunk, so every
assertion says exactly which chunk made which event.
"""

from __future__ import annotations

import queue
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.audio.chunker import Chunker
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.messages.input_audio import (
    AudioChunk,
    ClearInput,
    CommitInput,
    SpeculationVoided,
    SpeechOngoing,
    SpeechStarted,
    SpeechStopped,
    Utterance,
)
from speech_to_speech.pipeline.messages.turn_taking import ProbeSpeech
from speech_to_speech.pipeline.session_config import ConfigHolder, TurnDetection
from speech_to_speech.testing.engine import backend_settings, scripted_settings, silence, speech
from speech_to_speech.testing.scripted import EnergyVAD

CHUNK_S = 0.032


def chunks(n: int) -> float:
    """Seconds of ``n`` whole VAD chunks: keeps every push aligned to the chunk grid."""
    return n * CHUNK_S


class VAD:
    def __init__(self, **settings: Any) -> None:
        settings.setdefault("interim_transcript_ms", 0)  # turn logic alone (interim passes: tested below)
        self.config = ConfigHolder()
        self.events: queue.Queue[Any] = queue.Queue()
        self.handler = EnergyVAD(
            HandlerContext(CancelScope(), self.config),
            queue.Queue(),
            queue.Queue(),
            model=None,
            **backend_settings(EnergyVAD, scripted_settings(**settings)),
            events=self.events,
        )
        self.chunker = Chunker()

    def feed(self, audio: np.ndarray) -> list[Any]:
        """Events and utterances, in order, that ``audio`` produced."""
        out: list[Any] = []
        for samples, offset in self.chunker.push(audio):
            out += self.item(AudioChunk(samples, offset))
        return out

    def item(self, item: Any) -> list[Any]:
        utterances = list(self.handler.process(item))
        events = []
        while not self.events.empty():
            events.append(self.events.get_nowait())
        return events + utterances

    def chunks_until(self, audio: np.ndarray, kind: type) -> int:
        """How many chunks of ``audio`` it takes until an item of ``kind`` comes out."""
        for n, (samples, offset) in enumerate(self.chunker.push(audio), start=1):
            if any(isinstance(i, kind) for i in self.item(AudioChunk(samples, offset))):
                return n
        raise AssertionError(f"no {kind.__name__}")


def position(items: list[Any], wanted: Any) -> int:
    """Index by identity: items holding audio arrays do not compare with ==."""
    return next(i for i, item in enumerate(items) if item is wanted)


def kinds(items: list[Any]) -> list[type]:
    return [type(i) for i in items]


@pytest.fixture
def vad() -> VAD:
    # Turn logic alone: no speculative utterances at pauses (tested on their own below).
    return VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=300, speculation_silence_ms=0)


def test_a_tone_is_a_turn(vad: VAD) -> None:
    items = vad.feed(np.concatenate([speech(chunks(18)), silence(chunks(32))]))
    assert kinds(items) == [SpeechStarted, SpeechStopped, Utterance]
    started, stopped, utterance = items
    assert started.audio_start_ms == 0 and started.interrupt_response
    assert started.item_id == stopped.item_id == utterance.item_id is not None
    assert not utterance.manual
    # The turn holds all the speech and at most the prefix pad of trailing silence.
    assert chunks(18) <= len(utterance.samples) / 16000 <= chunks(18) + 0.3 + CHUNK_S
    assert np.abs(utterance.samples[: int(0.5 * 16000)]).max() > 0.2


def test_speech_starts_after_min_speech_ms_and_stops_after_min_silence_ms(vad: VAD) -> None:
    assert vad.chunks_until(speech(chunks(32)), SpeechStarted) == 8  # 8 * 32 ms >= 250 ms
    vad.feed(speech(chunks(6)))
    assert vad.chunks_until(silence(chunks(64)), SpeechStopped) == 16  # 16 * 32 ms >= 500 ms


def test_a_click_shorter_than_min_speech_ms_is_ignored(vad: VAD) -> None:
    assert vad.feed(np.concatenate([speech(chunks(3)), silence(chunks(32))])) == []
    # ...and leaves no trace on the next real turn.
    items = vad.feed(np.concatenate([speech(chunks(18)), silence(chunks(32))]))
    assert kinds(items) == [SpeechStarted, SpeechStopped, Utterance]


def test_prefix_padding_keeps_audio_before_the_speech(vad: VAD) -> None:
    items = vad.feed(np.concatenate([silence(chunks(32)), speech(chunks(18)), silence(chunks(32))]))
    started, utterance = items[0], items[2]
    assert 1024 - 300 - 32 <= started.audio_start_ms < 1024
    assert utterance.audio_start_ms == started.audio_start_ms


def test_the_session_threshold_is_read_live(vad: VAD) -> None:
    quiet = speech(chunks(18), level=0.02)  # energy VAD probability ~0.28
    assert vad.feed(np.concatenate([quiet, silence(chunks(32))])) == []
    vad.config.update(turn_detection=TurnDetection(threshold=0.2))
    assert kinds(vad.feed(np.concatenate([quiet, silence(chunks(32))]))) == [SpeechStarted, SpeechStopped, Utterance]
    vad.config.update(turn_detection=TurnDetection(threshold=0.9))
    assert vad.feed(np.concatenate([speech(chunks(18), level=0.04), silence(chunks(32))])) == []


def test_the_session_silence_duration_is_read_live(vad: VAD) -> None:
    vad.config.update(turn_detection=TurnDetection(silence_duration_ms=200))
    vad.feed(speech(chunks(18)))
    assert vad.chunks_until(silence(chunks(32)), SpeechStopped) == 7  # 7 * 32 ms >= 200 ms


def test_speech_started_says_whether_it_may_interrupt(vad: VAD) -> None:
    vad.config.update(turn_detection=TurnDetection(interrupt_response=False))
    started = vad.feed(speech(chunks(18)))[0]
    assert isinstance(started, SpeechStarted) and not started.interrupt_response


def test_a_hesitation_between_the_thresholds_does_not_end_the_turn(vad: VAD) -> None:
    vad.feed(speech(chunks(18)))
    # RMS 0.02 -> probability 0.4: below the 0.5 threshold, above the 0.35 silence level.
    assert vad.feed(speech(chunks(32), level=0.02 * np.sqrt(2))) == []
    assert SpeechStopped in kinds(vad.feed(silence(chunks(32))))


def test_a_turn_longer_than_max_speech_ms_is_cut() -> None:
    vad = VAD(max_speech_ms=1000)
    items = vad.feed(speech(chunks(47)))
    # Cut at 1 s; the speech that goes on is the next turn.
    assert kinds(items) == [SpeechStarted, SpeechStopped, Utterance, SpeechStarted]
    assert abs(len(items[2].samples) / 16000 - 1.0) <= CHUNK_S


def test_without_turn_detection_nothing_is_automatic_and_commit_takes_the_buffer(vad: VAD) -> None:
    vad.config.update(turn_detection=None)
    assert vad.feed(np.concatenate([speech(chunks(18)), silence(chunks(32))])) == []
    (utterance,) = vad.item(CommitInput("item_manual"))
    assert isinstance(utterance, Utterance)
    assert utterance.manual and utterance.item_id == "item_manual"
    assert len(utterance.samples) == 50 * 512
    assert vad.item(CommitInput()) == []  # the buffer was taken


def test_clear_drops_the_buffered_audio(vad: VAD) -> None:
    vad.config.update(turn_detection=None)
    vad.feed(speech(chunks(18)))
    assert vad.item(ClearInput()) == []
    vad.feed(speech(chunks(6)))
    (utterance,) = vad.item(CommitInput())
    assert len(utterance.samples) == 6 * 512


def test_commit_during_server_vad_speech_ends_the_turn_now(vad: VAD) -> None:
    vad.feed(speech(chunks(18)))
    items = vad.item(CommitInput("item_c"))
    assert kinds(items) == [SpeechStopped, Utterance]
    assert items[1].manual and items[1].item_id == "item_c"
    assert vad.feed(silence(chunks(32))) == []  # the turn is over: no second stop


def test_session_end_forgets_the_turn(vad: VAD) -> None:
    vad.feed(speech(chunks(18)))
    vad.handler.on_session_end()
    assert vad.feed(silence(chunks(32))) == []


def test_a_pause_yields_one_speculative_utterance_and_the_turn_reuses_it() -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=96, speculation_silence_ms=64)
    out = vad.feed(silence(chunks(3))) + vad.feed(speech(chunks(12)))
    out += vad.feed(silence(chunks(20)))
    utterances = [i for i in out if isinstance(i, Utterance)]
    speculative, final = utterances
    assert speculative.speculative and not speculative.reuse_speculation
    assert final.reuse_speculation and not final.speculative
    assert speculative.item_id == final.item_id
    # The speculation came after 2 silent chunks (64 ms), long before the end of the turn.
    assert position(out, speculative) < kinds(out).index(SpeechStopped)
    assert SpeculationVoided not in kinds(out)


def test_speech_after_the_pause_resumes_the_turn_and_the_final_utterance_is_new() -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=96, speculation_silence_ms=64)
    out = vad.feed(speech(chunks(12))) + vad.feed(silence(chunks(4))) + vad.feed(speech(chunks(8)))
    out += vad.feed(silence(chunks(20)))
    resumed = [i for i in out if isinstance(i, SpeculationVoided)]
    utterances = [i for i in out if isinstance(i, Utterance)]
    assert len(resumed) == 1
    # One speculation per pause: the first is void once speech resumed; the turn's end reuses
    # the second, which covers all of the speech.
    assert [u.speculation for u in utterances] == [1, 2, 0]
    assert resumed[0].speculation == 1  # it voids the first, not the one to come
    assert position(out, resumed[0]) < position(out, utterances[1])
    assert utterances[-1].reuse_speculation
    assert resumed[0].item_id == utterances[-1].item_id
    assert len(utterances[1].samples) > len(utterances[0].samples)


def test_no_speculation_without_automatic_responses() -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=96, speculation_silence_ms=64)
    vad.config.update(turn_detection=TurnDetection(create_response=False))
    out = vad.feed(speech(chunks(12))) + vad.feed(silence(chunks(20)))
    assert [u.speculative for u in out if isinstance(u, Utterance)] == [False]


def test_clearing_a_turn_voids_its_speculations() -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=96, speculation_silence_ms=64)
    out = vad.feed(speech(chunks(12))) + vad.feed(silence(chunks(4)))
    (speculative,) = [u for u in out if isinstance(u, Utterance)]
    voided = vad.item(ClearInput())
    assert voided == [SpeculationVoided(speculative.item_id, 1)]
    assert vad.feed(silence(chunks(20))) == []  # and the turn is gone


def test_committing_a_turn_under_the_clients_id_voids_its_speculations() -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=96, speculation_silence_ms=64)
    out = vad.feed(speech(chunks(12))) + vad.feed(silence(chunks(4)))
    (speculative,) = [u for u in out if isinstance(u, Utterance)]
    committed = vad.item(CommitInput("item_client"))
    assert committed[0] == SpeculationVoided(speculative.item_id, 1)
    (utterance,) = [u for u in committed if isinstance(u, Utterance)]
    assert utterance.item_id == "item_client" and utterance.manual and not utterance.reuse_speculation


def test_a_turn_without_speculations_voids_nothing_when_cleared(vad: VAD) -> None:
    vad.feed(speech(chunks(12)))
    assert vad.item(ClearInput()) == []


# ---------------------------------------------------------------- the voiced span (overlap policy)


def test_the_voiced_span_runs_from_the_first_voiced_chunk_to_the_last_without_padding(vad: VAD) -> None:
    audio = [silence(chunks(12)), speech(chunks(10)), silence(chunks(5)), speech(chunks(5)), silence(chunks(32))]
    started, stopped, _ = vad.feed(np.concatenate(audio))
    assert started.speech_ms == 8 * 32  # what was voiced when it became speech (min_speech_ms 250)
    assert stopped.speech_ms == (10 + 5 + 5) * 32  # the pause inside counts; the pads around do not


def test_speech_ongoing_comes_once_as_the_voiced_span_reaches_the_overlap_barge_in_threshold(vad: VAD) -> None:
    vad.config.update(overlap_barge_in_ms=640)
    assert SpeechOngoing not in kinds(vad.feed(speech(chunks(19))))
    (mark,) = vad.feed(speech(chunks(1)))  # 20 * 32 ms = 640 ms
    assert isinstance(mark, SpeechOngoing) and mark.speech_ms == 640
    rest = vad.feed(np.concatenate([speech(chunks(20)), silence(chunks(32))]))
    assert kinds(rest) == [SpeechStopped, Utterance]
    assert rest[0].speech_ms == 40 * 32 and rest[0].item_id == mark.item_id


def test_no_speech_ongoing_without_the_setting_or_short_of_it(vad: VAD) -> None:
    assert SpeechOngoing not in kinds(vad.feed(np.concatenate([speech(chunks(60)), silence(chunks(32))])))
    vad.config.update(overlap_barge_in_ms=640)
    assert SpeechOngoing not in kinds(vad.feed(np.concatenate([speech(chunks(19)), silence(chunks(32))])))


@settings(max_examples=60, deadline=None)
@given(threshold_chunks=st.integers(min_value=0, max_value=40),
       segments=st.lists(st.tuples(st.booleans(), st.integers(min_value=1, max_value=24)), max_size=12))
def test_speech_ongoing_is_sent_for_a_turn_iff_its_final_voiced_span_reaches_the_threshold(
        threshold_chunks: int, segments: list[tuple[bool, int]]) -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=300, speculation_silence_ms=0)
    threshold = threshold_chunks * 32
    vad.config.update(overlap_barge_in_ms=threshold)
    audio = [speech(chunks(n)) if voiced else silence(chunks(n)) for voiced, n in segments]
    items = vad.feed(np.concatenate([*audio, silence(chunks(32))]))
    marks: list[SpeechOngoing] = []
    for item in items:
        if isinstance(item, SpeechStarted):
            marks = []
        elif isinstance(item, SpeechOngoing):
            assert item.speech_ms >= threshold
            marks.append(item)
        elif isinstance(item, SpeechStopped):
            assert item.speech_ms is not None
            assert len(marks) == (1 if item.speech_ms >= threshold else 0)  # once, and only then
            assert all(m.item_id == item.item_id and m.speech_ms <= item.speech_ms for m in marks)


def test_while_the_user_speaks_the_speech_so_far_goes_out_after_every_interim_span_of_voice() -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=96, speculation_silence_ms=0,
              interim_transcript_ms=320)
    items = vad.feed(np.concatenate([speech(chunks(32)), silence(chunks(20))]))  # 1024 ms of voice
    interim = [i for i in items if isinstance(i, Utterance) and i.interim]
    assert len(interim) == 3  # at 320, 640 and 960 ms of voice
    assert len({i.item_id for i in interim}) == 1
    assert [len(i.samples) for i in interim] == sorted({len(i.samples) for i in interim})  # growing
    stopped = kinds(items).index(SpeechStopped)
    assert all(isinstance(i, Utterance) and i.interim for i in items[:stopped] if isinstance(i, Utterance))
    assert sum(isinstance(i, Utterance) and i.interim for i in items[:stopped]) == 3  # all before the turn ends
    (final,) = [i for i in items if isinstance(i, Utterance) and not i.interim]
    assert final.item_id == interim[0].item_id and not final.speculative
    # The next turn counts its voice from zero again.
    again = vad.feed(np.concatenate([speech(chunks(12)), silence(chunks(20))]))
    assert sum(isinstance(i, Utterance) and i.interim for i in again) == 1


def test_no_interim_utterances_when_they_are_off() -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, interim_transcript_ms=0)
    items = vad.feed(np.concatenate([speech(chunks(40)), silence(chunks(20))]))
    assert not any(isinstance(i, Utterance) and i.interim for i in items)


def test_a_probe_sends_the_speech_so_far_at_once_and_again_after_the_voice_it_asks_for() -> None:
    """Speech over the answer is judged by its words: the service asks for them (ProbeSpeech)."""
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=300, speculation_silence_ms=0)
    started = next(i for i in vad.feed(speech(chunks(8))) if isinstance(i, SpeechStarted))
    [first] = vad.item(ProbeSpeech(started.item_id))
    assert isinstance(first, Utterance) and first.probe and first.interim and first.item_id == started.item_id
    assert vad.item(ProbeSpeech("another_item")) == []  # not the turn being spoken: nothing
    assert vad.item(ProbeSpeech(started.item_id, 160)) == []  # no more voice yet: it waits for 160 ms more
    later = [i for i in vad.feed(speech(chunks(6))) if isinstance(i, Utterance)]
    assert len(later) == 1 and later[0].probe  # at 5 chunks (160 ms) more, and once
    assert len(later[0].samples) == len(first.samples) + 5 * 512
    assert [i for i in vad.feed(speech(chunks(10))) if isinstance(i, Utterance)] == []  # nobody asked again


def test_speech_far_quieter_than_the_user_s_turns_starts_no_turn_until_the_user_speaks_over_it() -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=300, speculation_silence_ms=0,
              user_level_margin_db=8.0)
    assert kinds(vad.feed(np.concatenate([speech(chunks(18), level=1.0), silence(chunks(32))]))) == [
        SpeechStarted, SpeechStopped, Utterance]  # the first turn: the user's level
    # A voice across the room, 20 dB under it: heard as speech, not as a turn.
    assert vad.feed(np.concatenate([speech(chunks(40), level=0.1), silence(chunks(32))])) == []
    # 6 dB under it: the user, a little further away.
    assert SpeechStarted in kinds(vad.feed(np.concatenate([speech(chunks(18), level=0.5), silence(chunks(32))])))
    # The user starting to talk while the room does: a turn as soon as their voice is loud enough.
    n = vad.chunks_until(np.concatenate([speech(chunks(20), level=0.1), speech(chunks(20), level=1.0)]),
                         SpeechStarted)
    assert 20 < n <= 20 + 8  # not on the quiet voice; within min_speech_ms of the user's own


def test_without_a_margin_every_speech_is_a_turn() -> None:
    vad = VAD(min_speech_ms=250, min_silence_ms=500, speech_pad_ms=300, speculation_silence_ms=0,
              user_level_margin_db=0.0)
    vad.feed(np.concatenate([speech(chunks(18), level=1.0), silence(chunks(32))]))
    assert SpeechStarted in kinds(vad.feed(np.concatenate([speech(chunks(18), level=0.1), silence(chunks(32))])))
