"""The VAD stage shared by every VAD backend: audio in, turns out.

A backend only scores chunks (``speech_probability``); this stage hands each
score to the session's :class:`~speech_to_speech.vad.turn_host.TurnHost`,
which segments the speech (vad/segmenter.py) into speech_started /
speech_stopped events and whole utterances, with thresholds read from the
live session config at every chunk (vad/listening.py).

What ends a turn depends on the session's ``turn_detection.type``:
``server_vad`` ends it after ``silence_duration_ms`` of silence;
``semantic_vad``, when the unit has a turn detector, sends the turn's audio to
the detector as the pause begins (padded to ``--turn_pause_ms`` of silence) and
acts on its verdict (see :mod:`speech_to_speech.vad.turn_detector`). A turn
judged finished ends once it has paused ``--finished_pause_ms`` and the
speculative reply to the pause's words is ready to play (``ReplyReady``), or
at the silence rule's window, whichever comes first. Every decision about a
pause is a :class:`~speech_to_speech.turns.controller.TurnController`'s, on
this stage's audio clock; what it decides on comes back on this stage's input
queue (``TurnFeedback`` in pipeline/queue_items.py). With no turn detection
(manual turns) the audio waits for the client's commit.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any, ClassVar

from speech_to_speech import ids
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import TurnSettings, VADSettings
from speech_to_speech.pipeline.handler import BackendHandler, HandlerContext
from speech_to_speech.pipeline.messages.input_audio import AudioChunk, ClearInput, CommitInput, Utterance
from speech_to_speech.pipeline.queue_items import Utterances, VADConsumed, VADInput
from speech_to_speech.pipeline.queues import Sink
from speech_to_speech.vad.listening import Listening, listening
from speech_to_speech.vad.segmenter import CHUNK_MS, utterance
from speech_to_speech.vad.speaker_embedder import embedder_for
from speech_to_speech.vad.turn_detector import TurnDetector
from speech_to_speech.vad.turn_host import TurnHost
from speech_to_speech.vad.user_gate import UserGate

__all__ = ["CHUNK_MS", "VADHandler"]


class VADHandler(BackendHandler[VADConsumed, Utterance]):
    """Tells speech from silence and ends turns: given the vad section (``settings``) and the turns section
    (``turn_settings``: the pauses, take-back, speculation and interim passes it times)."""

    stage = "vad"
    settings: VADSettings  # the vad section
    given_sections: ClassVar[dict[str, str]] = {"turn_settings": "turns"}
    # Whether the backend tells speech from other sound; a turn model has nothing to judge otherwise.
    hears_speech: ClassVar[bool] = True

    def __init__(self, context: HandlerContext, queue_in: queue.Queue[VADInput], queue_out: Sink[Utterances] | None,
                 *, turn_settings: TurnSettings | None = None, turn_detector: TurnDetector | None = None,
                 **backend: Any) -> None:
        super().__init__(context, queue_in, queue_out, **backend)
        self.turn_settings = turn_settings or TurnSettings.model_validate({})
        self.turn_detector = turn_detector
        embedder = embedder_for(self.settings.speaker_check)
        # This session's user, by level and voice; the level over the last min_speech_ms of voice may let speech in.
        user = UserGate(self.settings.user_level_margin_db, max(1, self.settings.min_speech_ms // CHUNK_MS), embedder)
        # The detector's verdicts come back on this stage's own input queue, in order with the audio.
        self.turn = TurnHost(user, turn_detector, reply_to=self.queue_in, emit=self.emit_event)
        self._manual_buffer: list[AudioChunk] = []  # the audio of a session without turn detection

    # ------------------------------------------------------------ backend hooks

    def speech_probability(self, chunk: FloatAudio) -> float:
        raise NotImplementedError

    def reset_model_state(self) -> None:
        """Forget recurrent model state (per session)."""

    # ------------------------------------------------------------ processing

    def _listening(self) -> Listening:
        return listening(self.context.config.current, self.settings, self.turn_settings,
                         has_detector=self.turn_detector is not None)

    def on_session_end(self) -> None:
        self._manual_buffer = []
        self.turn.new_session()
        self.reset_model_state()

    def process(self, item: VADConsumed) -> Iterator[Utterance]:
        if isinstance(item, AudioChunk):
            if not self.context.config.current.server_vad_enabled:
                self._manual_buffer.append(item)
                return
            probability = self.speech_probability(item.samples)
            yield from self.turn.hear(item, probability, self._listening())
        elif isinstance(item, ClearInput):
            self.turn.void_speculation()
            self.turn.reset()
            self._manual_buffer = []
        elif isinstance(item, CommitInput):
            yield from self._commit(item)
        else:
            yield from self.turn.feedback(item, self._listening())

    def _commit(self, item: CommitInput) -> Iterator[Utterance]:
        """A manual commit ends the turn now with whatever audio is buffered."""
        if self._manual_buffer:
            chunks, self._manual_buffer = self._manual_buffer, []
            yield utterance(chunks, item.item_id or ids.item_id(), manual=True)
            return
        yield from self.turn.commit(item.item_id)
