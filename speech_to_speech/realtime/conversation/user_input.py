"""The user's side of a session: the input audio buffer, and the user turns it commits.

:class:`UserInput` owns what the user has sent and not yet had answered: the
samples since the last commit (checked against the input limits), the turns
committed but not yet transcribed, those whose transcription failed, and
whether the user is speaking now. It pushes audio into the pipeline unit and
adds each committed turn to the conversation (``input_audio_buffer.committed``,
``conversation.item.added``). Runs on the event loop, like the service that
owns it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from speech_to_speech import ids
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import error_codes
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.conversation import conversation_item_added
from speech_to_speech.protocol.server_events.input_audio import input_audio_buffer_cleared, input_audio_buffer_committed
from speech_to_speech.realtime.connection.wire_audio import WireAudio
from speech_to_speech.realtime.conversation.echo import SessionEcho
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.noise import SessionNoise
from speech_to_speech.realtime.conversation.speculation import SpeculationSlot
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.input_limits import input_refusal
from speech_to_speech.realtime.wire.session import SessionState
from speech_to_speech.units.unit import PipelineUnit


class UserInput:
    """The input audio buffer of one session and the user turns it commits."""

    def __init__(self, unit: PipelineUnit, settings: ServerSettings, state: SessionState, *,
                 conversation: Conversation, speculations: SpeculationSlot, audio: WireAudio, echo: SessionEcho,
                 emit: Callable[[ServerEvent], None]) -> None:
        self._unit = unit
        self._settings = settings
        self._state = state
        self._conversation = conversation
        self._speculations = speculations
        self._audio = audio
        self._echo = echo
        self._noise = SessionNoise(lambda: state.config)  # audio.input.noise_reduction, after the echo is taken out
        self._emit = emit
        # Changed only by the methods below (the VAD's and the STT's items reach them through TurnEvents).
        self._uncommitted_samples = 0
        self._pending: set[str] = set()  # committed turns whose transcript is not in yet
        self._failed: set[str] = set()  # of those, the ones reported failed
        self._speaking = False

    @property
    def pending_transcriptions(self) -> AbstractSet[str]:
        """Committed user turns whose transcript is not in yet."""
        return self._pending

    @property
    def turn_open(self) -> bool:
        """The user's turn is not in yet: they are speaking, or a committed turn waits for its transcript."""
        return self._speaking or bool(self._pending)

    def speech_started(self) -> None:
        """The VAD heard the user start speaking."""
        self._speaking = True

    def speech_stopped(self) -> None:
        """The VAD heard the user stop: the audio so far is the VAD's turn (committed by it, not the client)."""
        self._speaking = False
        self._uncommitted_samples = 0

    def transcribed(self, item_id: str, transcript: str) -> tuple[dict[str, Any] | None, bool]:
        """The turn ``item_id`` has its ``transcript``: it no longer waits, and its item holds it. The item (None:
        the client deleted it meanwhile), and whether its transcription was reported failed
        (``transcription.failed``) on the way."""
        self._pending.discard(item_id)  # first: nothing may leave the turn pending
        failed = item_id in self._failed
        self._failed.discard(item_id)
        return self._conversation.transcribed(item_id, transcript), failed

    def transcription_failed(self, item_id: str) -> bool:
        """The STT failed on ``item_id``: True (it is to be reported failed) if it is a turn waiting for its
        transcript."""
        if item_id not in self._pending:
            return False
        self._failed.add(item_id)
        return True

    def decode(self, audio: str) -> FloatAudio:
        """A base64 append in the session's input format, as 16 kHz float32; raises codecs.AudioDecodeError.
        Touches only the input decoder, so it may run off the event loop (one append at a time)."""
        return self._audio.decode_input(audio)

    def refusal(self, samples: int) -> RealtimeError | None:
        return input_refusal(self._settings, self._uncommitted_samples, self._unit.queues.vad_input.qsize(),
                             samples, manual=self._state.config.turn_detection is None)

    def push(self, samples_16k: np.ndarray) -> None:
        """16 kHz float32 user audio from any transport, already checked against the caps (:meth:`refusal`)."""
        echoed = self._echo.playing
        samples_16k = self._noise.heard(self._echo.heard(samples_16k))
        self._uncommitted_samples += len(samples_16k)
        self._unit.push_audio(samples_16k, echoed)

    def commit(self) -> str:
        """End the user's turn with the audio sent so far (input_audio_buffer.commit): its item id."""
        if self._uncommitted_samples == 0:
            raise RealtimeError(error_codes.COMMIT_EMPTY, "The input audio buffer is empty: nothing to commit")
        self._uncommitted_samples = 0
        self._speculations.drop()
        self._unit.push_audio(self._audio.flush_input())  # the commit's audio, not the next turn's
        item_id = ids.item_id()
        self._unit.commit_input(item_id)
        self.commit_user_audio(item_id)
        return item_id

    def clear(self) -> None:
        """Drop the audio sent since the last turn (input_audio_buffer.clear)."""
        self._uncommitted_samples = 0
        self._speculations.drop()
        self._audio.reset_input()  # what it held belongs to the cleared audio
        self._unit.clear_input()
        self._emit(input_audio_buffer_cleared())

    def committed(self, item_id: str) -> bool:
        """The pipeline ended the turn ``item_id`` (the VAD, or the STT's transcript of it): it joins the
        conversation unless it is there already. True if it joined now."""
        if item_id in self._conversation:
            return False
        self.commit_user_audio(item_id)
        return True

    def commit_user_audio(self, item_id: str) -> None:
        """Add the user turn ``item_id`` to the conversation; it waits for its transcript."""
        previous = self._conversation.last_id
        user_item = {
            "id": item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_audio", "transcript": None}],
        }
        self._conversation.add(user_item)
        self._pending.add(item_id)
        self._emit(input_audio_buffer_committed(previous, item_id))
        self._emit(conversation_item_added(user_item, previous))
