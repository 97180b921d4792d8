"""TranscriptionNotifier: STT hypotheses -> append-only transcription events.

Partial hypotheses are cumulative and may revise earlier words. A word goes
on the wire (``TranscriptionDelta``) only once two consecutive hypotheses
agree on it and a newer word follows it; a hypothesis that contradicts what
was already sent is withheld (the protocol cannot retract text). Every
partial also yields a replaceable ``TranscriptionSnapshot``, and the final
transcript a ``TranscriptionCompleted`` that is authoritative.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator

from speech_to_speech.pipeline.handler import BaseHandler, HandlerContext
from speech_to_speech.pipeline.messages.transcription import (
    SpeculativeTranscript,
    Transcript,
    TranscriptionCompleted,
    TranscriptionDelta,
    TranscriptionSnapshot,
)
from speech_to_speech.pipeline.queue_items import StageEvent, Transcripts
from speech_to_speech.pipeline.queues import Sink
from speech_to_speech.pipeline.words import normalize_word

# What a transcript becomes for the service: the words confirmed, the hypothesis so far, a pause's words, the
# final transcript.
TranscriptionEvent = TranscriptionDelta | TranscriptionSnapshot | SpeculativeTranscript | TranscriptionCompleted


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class _ItemState:
    def __init__(self) -> None:
        self.previous: list[str] = []  # normalized words of the last hypothesis
        self.sent: list[str] = []  # normalized words already on the wire


def confirmed_delta(state: _ItemState, hypothesis: str) -> str:
    """The next append-only delta for ``hypothesis`` ("" when nothing is confirmed)."""
    raw = hypothesis.split()
    words = [normalize_word(w) for w in raw]
    previous, state.previous = state.previous, words
    if words[: len(state.sent)] != state.sent:
        return ""  # revises text already sent: withhold
    stable = min(_common_prefix(previous, words), len(words) - 1)
    if stable <= len(state.sent):
        return ""
    new = raw[len(state.sent) : stable]
    delta = " ".join(new)
    if state.sent:
        delta = " " + delta
    state.sent = words[:stable]
    return delta


def final_delta(state: _ItemState, transcript: str) -> str:
    """The rest of the final transcript after what was sent, if it still agrees."""
    raw = transcript.split()
    words = [normalize_word(w) for w in raw]
    if words[: len(state.sent)] != state.sent or len(raw) <= len(state.sent):
        return ""
    delta = " ".join(raw[len(state.sent) :])
    return (" " + delta) if state.sent else delta


class TranscriptionNotifier(BaseHandler[Transcript, TranscriptionEvent]):
    stage = "transcription_notifier"

    def __init__(self, context: HandlerContext, queue_in: queue.Queue[Transcripts],
                 queue_out: Sink[StageEvent] | None) -> None:
        super().__init__(context, queue_in, queue_out)
        self._items: dict[str | None, _ItemState] = {}

    def on_session_end(self) -> None:
        self._items.clear()

    def process(self, item: Transcript) -> Iterator[TranscriptionEvent]:
        state = self._items.setdefault(item.item_id, _ItemState())
        if not item.final:
            delta = confirmed_delta(state, item.text)
            if delta:
                yield TranscriptionDelta(item.item_id, delta)
            yield TranscriptionSnapshot(item.item_id, item.text, item.avg_logprob, item.readings, item.hum_gap)
            if item.speculative:
                yield SpeculativeTranscript(item.item_id, item.text, item.speculation, item.continuation,
                                            item.language)
            return
        del self._items[item.item_id]
        delta = final_delta(state, item.text)
        if delta:
            yield TranscriptionDelta(item.item_id, delta)
        yield TranscriptionCompleted(
            item_id=item.item_id,
            transcript=item.text,
            language=item.language,
            audio_seconds=item.audio_seconds,
            manual=item.manual,
            stt_done_time=item.stt_done_time,
            ended=item.ended,
            avg_logprob=item.avg_logprob,
            readings=item.readings,
            second_reading=item.second_reading,
            hum_gap=item.hum_gap,
        )
