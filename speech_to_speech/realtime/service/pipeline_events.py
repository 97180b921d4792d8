"""Pipeline items into Realtime events: which translator takes each kind of item.

:class:`PipelineEvents` is where the send loop hands every item the unit
produced. A running speculation's output is held off the wire first
(conversation/speculation.py), and so is speech over the assistant's answer
until its words decide (conversation/overlap_judge.py); anything else goes to the user-side translator
(:class:`~speech_to_speech.realtime.service.turn_events.TurnEvents`) or the
response-side one (:class:`~speech_to_speech.realtime.service.response_events.ResponseEvents`)
by its type. An item whose translation adopts a speculation (the turn's
transcript is in) is followed by that speculation's held output, taken from
the responses once the translation returns. A failure while translating fails
the active response, never the session. It keeps the clock of the pipeline's last output, which the
stalled-response guard reads (sessions/guard.py).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from speech_to_speech.pipeline.messages.control import StageError
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, LLMFirstToken, ResponseDone, TokenUsage
from speech_to_speech.pipeline.messages.input_audio import (
    SpeculationVoided,
    SpeechOngoing,
    SpeechStarted,
    SpeechStopped,
)
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, AudioVisemes, TranscriptText, TTSFirstAudio
from speech_to_speech.pipeline.messages.transcription import (
    SpeculativeTranscript,
    TranscriptionCompleted,
    TranscriptionDelta,
    TranscriptionSnapshot,
)
from speech_to_speech.pipeline.messages.turn_taking import TurnDecision
from speech_to_speech.protocol import error_codes
from speech_to_speech.realtime.conversation.overlap_judge import OverlapJudge
from speech_to_speech.realtime.conversation.responses import Responses
from speech_to_speech.realtime.conversation.speculation import SpeculationSlot
from speech_to_speech.realtime.service.response_events import ResponseEvents
from speech_to_speech.realtime.service.turn_events import TurnEvents

log = logging.getLogger(__name__)

Item = TypeVar("Item")


class PipelineEvents:
    """Dispatches one session's pipeline items to their translators (runs on the event loop)."""

    def __init__(self, turns: TurnEvents, output: ResponseEvents, *, responses: Responses,
                 speculations: SpeculationSlot, overlap_judge: OverlapJudge) -> None:
        self._responses = responses
        self._speculations = speculations
        self._overlap_judge = overlap_judge
        self._handlers: dict[type, Callable[[Any], None]] = {
            SpeechStarted: turns.speech_started,
            SpeechStopped: turns.speech_stopped,
            SpeechOngoing: turns.speech_ongoing,
            TurnDecision: turns.turn_decided,
            TranscriptionDelta: turns.transcription_delta,
            TranscriptionSnapshot: turns.transcription_snapshot,
            TranscriptionCompleted: turns.transcription_completed,
            TranscriptText: output.assistant_text,
            AudioOutput: output.audio,
            AudioVisemes: output.visemes,
            AssistantToolCallPart: output.tool_call,
            TokenUsage: output.usage,
            LLMFirstToken: output.first_token,
            TTSFirstAudio: output.first_audio,
            ResponseDone: output.response_done,
            StageError: output.stage_error,
            SpeculativeTranscript: turns.speculate,
            SpeculationVoided: turns.speculation_voided,
        }
        self.last_output = time.monotonic()  # when the pipeline last produced anything

    def listen(self, kind: type[Item], listener: Callable[[Item], None]) -> None:
        """``listener`` hears each ``kind`` item as it is translated (the server's metrics hear the turn
        detector's decisions): joined to its translator here, so other items cost nothing more."""
        translate = self._handlers[kind]

        def heard(item: Item) -> None:
            listener(item)
            translate(item)

        self._handlers[kind] = heard

    def dispatch(self, item: Any) -> None:
        """Turn one pipeline item into events; a failure here fails the response, never the session."""
        self._dispatch(deque([item]))

    def dispatch_adopted(self) -> None:
        """Translate the held output of a speculation adopted outside a pipeline item (its response's MCP
        servers got listed, a client event)."""
        self._dispatch(deque(self._responses.adopted_output()))

    def _dispatch(self, arrived: deque[Any]) -> None:
        while arrived:
            item = arrived.popleft()
            if self._speculations.hold(item):
                continue
            self.last_output = time.monotonic()
            # Speech over the answer waits for its words (adaptive overlap policy); a barge-in releases it all.
            for each in self._overlap_judge.take(item):
                self._translate(each)
                arrived.extend(self._responses.adopted_output())

    def _translate(self, item: Any) -> None:
        handler = self._handlers.get(type(item))
        if handler is None:
            log.debug("no dispatch for %s", type(item).__name__)
            return
        try:
            handler(item)
        except Exception as error:
            log.exception("turning %s into events failed", type(item).__name__)
            self._responses.fail(error_codes.SERVER_ERROR, f"{type(error).__name__}: {error}",
                                 self._responses.active)
