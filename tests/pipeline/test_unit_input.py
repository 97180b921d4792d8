"""The input branch of a unit: audio in, turn events and transcripts out."""

from __future__ import annotations

from speech_to_speech.pipeline.messages.input_audio import SpeechStarted, SpeechStopped
from speech_to_speech.pipeline.messages.transcription import TranscriptionCompleted, TranscriptionDelta
from speech_to_speech.testing.engine import UnitFactory, collect, next_of, speech, turn_audio

CHUNK_S = 512 / 16000


def test_a_spoken_turn_yields_events_then_its_transcript(make_unit: UnitFactory) -> None:
    unit = make_unit(scripted_transcripts=["Hello there, engine."])
    unit.push_audio(turn_audio())
    items = collect(unit.queues.stage_events, TranscriptionCompleted)
    kinds = [type(i) for i in items]
    # Speculative hypotheses may come between them; the turn's own events keep their order.
    assert kinds.index(SpeechStarted) == 0 and kinds.index(SpeechStopped) < len(items) - 1
    started = items[0]
    completed = items[-1]
    assert completed.transcript == "Hello there, engine."
    assert completed.item_id == started.item_id
    assert not completed.manual
    deltas = "".join(i.delta for i in items if isinstance(i, TranscriptionDelta))
    assert deltas == "Hello there, engine."


def test_commit_includes_audio_short_of_a_whole_chunk(make_unit: UnitFactory) -> None:
    unit = make_unit()
    unit.config.update(turn_detection=None)
    unit.push_audio(speech(0.5))  # 15.6 chunks
    unit.commit_input("item_manual")
    completed = next_of(unit.queues.stage_events, TranscriptionCompleted)
    assert completed.item_id == "item_manual" and completed.manual
    assert completed.audio_seconds == 16 * CHUNK_S


def test_clear_drops_audio_short_of_a_whole_chunk_too(make_unit: UnitFactory) -> None:
    unit = make_unit()
    unit.config.update(turn_detection=None)
    unit.push_audio(speech(0.5))  # leaves 320 samples waiting in the chunker
    unit.clear_input()
    unit.push_audio(speech(3000 / 16000))
    unit.commit_input()
    assert next_of(unit.queues.stage_events, TranscriptionCompleted).audio_seconds == 6 * CHUNK_S
