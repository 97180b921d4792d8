"""The response's output as the pipeline makes it, turned into ``response.*`` events.

:class:`ResponseEvents` takes the LLM's, the TTS's and the viseme stage's
items (assistant text, audio, visemes, tool calls, token usage, first-token
and first-audio marks, the request's terminal) and stage failures, checks
each belongs to the active response and is not stale (``Responses.current``),
and sends its events: the message or function call it opens, its deltas, and
the response's end. Audio goes to the playback ledger, which counts it, tells
the echo canceller, and encodes it for the wire (or plays it on the media track).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from speech_to_speech.pipeline.messages.control import StageError
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, LLMFirstToken, ResponseDone, TokenUsage
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, AudioVisemes, TranscriptText, TTSFirstAudio
from speech_to_speech.protocol import VISEMES_EXTENSION, error_codes, error_types
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.input_audio import input_audio_transcription_failed
from speech_to_speech.realtime.conversation.overlap import OverlapGate
from speech_to_speech.realtime.conversation.playback import Playback
from speech_to_speech.realtime.conversation.responses import Responses
from speech_to_speech.realtime.conversation.user_input import UserInput
from speech_to_speech.realtime.wire import errors
from speech_to_speech.realtime.wire.session import SessionState

log = logging.getLogger(__name__)


class ResponseEvents:
    """The response-side pipeline items of one session, each turned into its events (runs on the event loop)."""

    def __init__(self, responses: Responses, state: SessionState, *, user_input: UserInput,
                 playback: Playback, overlap: OverlapGate, emit: Callable[[ServerEvent], None],
                 stage_errors: errors.Throttle) -> None:
        self._responses = responses
        self._state = state
        self._input = user_input
        self._playback = playback
        self._overlap = overlap
        self._emit = emit
        self._stage_errors = stage_errors

    def assistant_text(self, item: TranscriptText) -> None:
        response = self._responses.current(item)
        if response is None or not item.text:
            return
        message = self._responses.open_message(response)
        self._emit(response.text_delta(message, item.text))
        if response.audio:  # the clause whose audio comes next (text marks)
            self._playback.spoken_text(response.id, message.item["id"], len(message.transcript))

    def audio(self, item: AudioOutput) -> None:
        response = self._responses.current(item)
        if response is None or not response.audio:
            return
        message = self._responses.open_message(response)
        response.mark("first_audio_sent", time.monotonic(), first=True)
        # Counted by the ledger, which tells the echo canceller and encodes it for the wire.
        payload = self._playback.produced(response.id, message.item["id"], item.samples)
        if payload is None:
            return  # the track plays it
        self._emit(response.audio_delta(message, payload, self._playback.delta_metadata(response.id,
                                                                                         message.item["id"])))

    def visemes(self, item: AudioVisemes) -> None:
        """The visemes extension: sent just before the audio chunk they describe (docs/visemes.md)."""
        response = self._responses.current(item)
        if response is None or not response.audio or not self._state.config.has_extension(VISEMES_EXTENSION):
            return
        message = self._responses.open_message(response)
        self._emit(response.visemes(message, self._playback.produced_ms(message.item["id"]), item))

    def tool_call(self, item: AssistantToolCallPart) -> None:
        response = self._responses.current(item)
        if response is None:
            return
        self._responses.tool_call(response, item)

    def usage(self, item: TokenUsage) -> None:
        response = self._responses.current(item)
        if response is not None:
            response.count(item)

    def first_token(self, item: LLMFirstToken) -> None:
        response = self._responses.current(item)
        if response is not None:
            response.mark("llm_first_token", item.time)

    def first_audio(self, item: TTSFirstAudio) -> None:
        response = self._responses.current(item)
        if response is not None:
            response.mark("tts_first_audio", item.time)

    def response_done(self, item: ResponseDone) -> None:
        # The terminal of the response's own request only: a cancelled request of the same id
        # (a speculation that was not adopted) ends in an older generation.
        response = self._responses.active
        if response is not None and response.submitted and response.owns(item):
            self._responses.request_done(response, item)
            if self._responses.active is not response:
                self._overlap.response_ended(response.id)

    def stage_error(self, item: StageError) -> None:
        log.warning("pipeline stage %s failed: %s", item.stage, item.message)
        if item.retried:
            return
        response = self._responses.active
        if item.response_id is not None:  # output of a request: its response, unless that was cancelled
            response = self._responses.current(item)
            if response is None:
                return
        elif response is not None and (response.submitted or item.item_id is None
                                       or response.turn_item_id != item.item_id):
            response = None  # an input-side failure concerns only the response waiting for that turn
        code, message = error_codes.stage_failed(item.stage), f"{item.stage} failed: {item.message}"
        turn = item.item_id
        if turn is not None and self._input.transcription_failed(turn):
            self._emit(input_audio_transcription_failed(
                turn, {"type": error_types.SERVER_ERROR, "code": code, "message": message, "param": None}))
        elif response is None and not self._stage_errors.due(item.stage):
            return  # a stage failing on every chunk (the VAD, say) is reported now and then, not each time
        self._responses.fail(code, message, response)
