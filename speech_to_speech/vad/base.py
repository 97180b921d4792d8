"""Turn tracking shared by every VAD backend.

A backend only scores chunks (``speech_probability``); this class turns the
scores into speech_started / speech_stopped events and whole utterances,
with thresholds read from the live session config at every chunk.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from speech_to_speech import ids
from speech_to_speech.audio.chunker import VAD_CHUNK
from speech_to_speech.pipeline.handler import BackendHandler
from speech_to_speech.pipeline.messages import (
    AudioChunk,
    ClearInput,
    CommitInput,
    FloatAudio,
    SpeculationVoided,
    SpeechStarted,
    SpeechStopped,
    Utterance,
)

SAMPLE_RATE = 16000
CHUNK_MS = VAD_CHUNK * 1000 // SAMPLE_RATE  # 32 ms


def _ms(samples: int) -> int:
    return samples * 1000 // SAMPLE_RATE


class VADHandler(BackendHandler):
    stage = "vad"
    consumes = (AudioChunk, CommitInput, ClearInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
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
        self._manual_buffer: list[AudioChunk] = []
        # A speculative utterance of this turn is out and no speech followed it.
        self._speculated = False
        self._speculations = 0  # speculative utterances of this turn so far (their numbers)

    def on_session_end(self) -> None:
        self._reset_turn()
        self.reset_model_state()

    # ------------------------------------------------------------ processing

    def process(self, item: Any) -> Iterator[Any]:
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
            self._silence_run_ms = 0
            self._item_id = ids.item_id()
        else:
            self._speech.append(chunk)
            if voiced:
                self._voiced_ms += CHUNK_MS
                self._silence_run_ms = 0
                if self._speculated:
                    self._speculated = False
                    self.emit_event(SpeculationVoided(self._item_id, self._speculations))
            elif probability < max(threshold - 0.15, 0.01):
                self._silence_run_ms += CHUNK_MS
            else:
                self._silence_run_ms = 0  # hysteresis band: neither speech nor silence
        if not self._started_sent and self._voiced_ms >= self.settings.min_speech_ms:
            self._started_sent = True
            self.emit_event(
                SpeechStarted(_ms(self._speech[0].offset), interrupt_response=interrupt, item_id=self._item_id)
            )
        turn_ms = len(self._speech) * CHUNK_MS
        if self._silence_run_ms >= self._silence_ms() or turn_ms >= self.settings.max_speech_ms:
            yield from self._end_turn(manual=False)
        elif self._should_speculate():
            # A pause that may end the turn: let the STT (and the response) start now, so that
            # by the end of the silence window the work is done or well under way.
            self._speculated = True
            self._speculations += 1
            end_ms = _ms(self._speech[-1].offset + VAD_CHUNK)
            yield replace(self._utterance(self._speech, self._item_id, manual=False, end_ms=end_ms),
                          speculation=self._speculations)

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

    def _end_turn(self, manual: bool) -> Iterator[Any]:
        speech, started, item_id = self._speech, self._started_sent, self._item_id
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
        if not started:
            return  # too short to be a turn: a click or a cough
        kept = speech[: max(len(speech) - trailing, 1)]
        end_ms = _ms(kept[-1].offset + VAD_CHUNK)
        self.emit_event(SpeechStopped(end_ms, item_id=item_id))
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
            started = self._started_sent
            if item_id != self._item_id:
                self._void_speculations()  # the turn's words are committed under the client's id
            self._reset_turn()
            end_ms = _ms(chunks[-1].offset + VAD_CHUNK)
            if started:
                self.emit_event(SpeechStopped(end_ms, item_id=item_id))
            yield self._utterance(chunks, item_id, manual=True, end_ms=end_ms)
            return
        if item.item_id is not None:
            # The client was told this item was committed (silence under server VAD):
            # it still gets an utterance, so its transcription completes.
            chunks = list(self._history)
            self._history.clear()
            end_ms = _ms(chunks[-1].offset + VAD_CHUNK) if chunks else 0
            yield self._utterance(chunks, item.item_id, manual=True, end_ms=end_ms)
