"""RealtimeService: one session's protocol state over one pipeline unit.

Client events come in through :meth:`handle_client_event`, pipeline output
through :meth:`dispatch_pipeline_item`; both run on the event loop thread, so
the state here needs no locks. Every server event leaves through
:meth:`emit`, the one place that stamps it. The methods never await: the
transport writer drains what they emit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from speech_to_speech import ids
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages import (
    AssistantToolCallPart,
    AudioOutput,
    AudioVisemes,
    ChatMessage,
    GenerateResponseRequest,
    LLMFirstToken,
    PromptPrefill,
    ResponseDone,
    SpeculationVoided,
    SpeculativeTranscript,
    SpeechOngoing,
    SpeechStarted,
    SpeechStopped,
    StageError,
    TokenUsage,
    TranscriptionCompleted,
    TranscriptionDelta,
    TranscriptionSnapshot,
    TranscriptText,
    TTSFirstAudio,
    TurnDecision,
)
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.protocol import (
    ECHO_CANCELLATION_EXTENSION,
    SNAPSHOT_EXTENSION,
    TIMINGS_EXTENSION,
    VISEMES_EXTENSION,
    error_codes,
    error_types,
)
from speech_to_speech.realtime import errors
from speech_to_speech.realtime.client_events import apply_event, prepare_event
from speech_to_speech.realtime.conversation import Conversation, item_text
from speech_to_speech.realtime.errors import RealtimeError
from speech_to_speech.realtime.events import ClientEvent, EventLimits
from speech_to_speech.realtime.input_limits import input_refusal
from speech_to_speech.realtime.overlap import OverlapGate
from speech_to_speech.realtime.playback import Playback
from speech_to_speech.realtime.response import Event, OpenMessage, ResponseState
from speech_to_speech.realtime.response_metadata import finished_metadata
from speech_to_speech.realtime.session import SessionState
from speech_to_speech.realtime.session_echo import SessionEcho, echo_cancellation_available
from speech_to_speech.realtime.session_events import SessionControl
from speech_to_speech.realtime.speculation import Speculation, SpeculationSlot, same_words
from speech_to_speech.realtime.tool_results import ToolResultLedger
from speech_to_speech.realtime.transport import MediaTrack
from speech_to_speech.realtime.voices import VoiceCatalog
from speech_to_speech.realtime.wire_audio import WireAudio
from speech_to_speech.units.unit import PipelineUnit

log = logging.getLogger(__name__)


class RealtimeService:
    def __init__(
        self,
        unit: PipelineUnit,
        settings: ServerSettings,
        send: Callable[[Event], None],
        *,
        media: MediaTrack | None = None,
        validate_language: Callable[[str | None, str | None], str | None] | None = None,
        session_control: SessionControl | None = None,
        on_response_finished: Callable[[str, dict[str, float]], None] | None = None,
        on_turn_decision: Callable[[TurnDecision], None] | None = None,
    ) -> None:
        """``session_control``: the live session around this service (heartbeat, event_ack, close); None: not
        served. ``on_response_finished`` (status, its monotonic stage marks) and ``on_turn_decision`` (each
        decision of the turn detector): the server's metrics."""
        self.unit = unit
        self.settings = settings
        self._send = send
        # WebSocket carries audio as events; WebRTC plays it on a media track instead.
        self.media = media
        self.audio_in_events = media is None
        self._validate_language = validate_language
        self.state = SessionState.for_server(settings, semantic_turns=unit.detects_turns,
                                             voices=VoiceCatalog(unit.voices))
        unit.config.replace(self.state.runtime_config())
        self.conversation = Conversation(settings.max_conversation_items)
        self.event_limits = EventLimits(settings.max_event_bytes, settings.max_event_depth)
        # When the client last sent anything (an event, media audio), and the pipeline last produced
        # anything: the clocks of the idle timeout and of the stalled-response guard (session_guard.py).
        self.last_activity = self.last_output = time.monotonic()
        # What the user heard of each assistant item; with a media track, also what it played.
        self.playback = Playback(self.conversation, self.emit, media,
                                 policy=lambda: self.state.playback_commit_policy)
        self.audio = WireAudio(lambda: self.state.input_format, lambda: self.state.output_format)
        self.echo = SessionEcho(lambda: echo_cancellation_available() and media is None and (
            settings.echo_cancellation == "server" or self.config.has_extension(ECHO_CANCELLATION_EXTENSION)))
        self.conversation_id = ids.new_id("conv")
        self.response: ResponseState | None = None
        self.pending_transcriptions: set[str] = set()
        self.failed_transcriptions: set[str] = set()
        self._stage_errors = errors.Throttle(errors.STAGE_ERROR_INTERVAL_S)
        self.speculations = SpeculationSlot(
            unit.cancel_scope, announce=unit.report_reply_ready if unit.detects_turns else None)
        self._turn_decision: TurnDecision | None = None  # how the detector ended the last turn
        self.user_speaking = False
        self.overlap = OverlapGate(self)  # what speech over the assistant does (overlap_policy)
        self.tool_results = ToolResultLedger()
        self.uncommitted_samples = 0
        self.session_control = session_control
        self.on_response_finished = on_response_finished
        self.on_turn_decision = on_turn_decision

    @property
    def config(self) -> RuntimeConfig:
        return self.unit.config.current

    # ------------------------------------------------------------ output

    def emit(self, event: Event) -> None:
        if "event_id" not in event:
            event = {"event_id": ids.event_id(), **event}
        self._send(event)

    def emit_all(self, events: list[Event]) -> None:
        for event in events:
            self.emit(event)

    def start(self, fields: dict[str, Any] | None = None, session_fields: dict[str, Any] | None = None) -> None:
        """``session.created``; ``fields`` join it (session_id, resume_token), ``session_fields`` its session."""
        self.emit({"type": "session.created", **(fields or {}), "session": {**self.state.session,
                                                                             **(session_fields or {})}})

    # ------------------------------------------------------------ client events

    def prepare_client_event(self, raw: str | bytes | dict[str, Any]) -> ClientEvent | RealtimeError:
        """Parse ``raw`` and decode an append's audio (may run off the event loop; see client_events)."""
        return prepare_event(self, raw)

    def handle_client_event(self, raw: str | bytes | dict[str, Any] | ClientEvent | RealtimeError) -> None:
        """Apply one client event (raw, or as :meth:`prepare_client_event` left it); rejections become errors."""
        self.last_activity = time.monotonic()
        apply_event(self, raw)

    def configure(self, session: Any, event_id: str | None = None) -> None:
        """Apply a session patch (a session.update, or the session a WebRTC call opens with); raises RealtimeError."""
        config = self.state.apply_update(session, event_id)
        if self._validate_language is not None:
            language = self._validate_language(config.language, event_id)
            config = config.model_copy(update={"language": language})
        self.unit.config.replace(config)
        td = config.turn_detection
        if self.response is None and (td is None or not td.create_response):
            self.speculations.drop()  # no automatic response will take it over now

    def input_refusal(self, samples: int) -> RealtimeError | None:
        return input_refusal(self.settings, self.uncommitted_samples, self.unit.queues.recv_audio_chunks.qsize(),
                             samples, manual=self.config.turn_detection is None)

    def push_input(self, samples_16k: np.ndarray) -> None:
        """16 kHz float32 user audio from any transport (a media track's over the caps is dropped)."""
        self.last_activity = time.monotonic()
        if self.media is not None and (refusal := self.input_refusal(len(samples_16k))) is not None:
            if self._stage_errors.due(refusal.code):
                self.emit(refusal.to_event())
            return
        samples_16k = self.echo.heard(samples_16k)
        self.uncommitted_samples += len(samples_16k)
        self.unit.push_audio(samples_16k)

    def commit_input(self) -> str:
        """End the user's turn with the audio sent so far (input_audio_buffer.commit): its item id."""
        if self.uncommitted_samples == 0:
            raise RealtimeError(error_codes.COMMIT_EMPTY, "The input audio buffer is empty: nothing to commit")
        self.uncommitted_samples = 0
        self.speculations.drop()
        self.unit.push_audio(self.audio.flush_input())  # the commit's audio, not the next turn's
        item_id = ids.item_id()
        self.unit.commit_input(item_id)
        self.commit_user_audio(item_id)
        return item_id

    def clear_input(self) -> None:
        """Drop the audio sent since the last turn (input_audio_buffer.clear)."""
        self.uncommitted_samples = 0
        self.speculations.drop()
        self.audio.reset_input()  # what it held belongs to the cleared audio
        self.unit.clear_input()
        self.emit({"type": "input_audio_buffer.cleared"})

    # ------------------------------------------------------------ responses

    def start_response(self, options: dict[str, Any], turn_item_id: str | None = None) -> None:
        """Open a response (response.created); it is submitted once its input is transcribed.

        An automatic response to a user turn takes over that turn's running speculation
        (its id and generation); any other speculation is of no use to it and stops.
        """
        config = self.config
        speculation = self.speculations.current
        if speculation is None or turn_item_id is None or speculation.item_id != turn_item_id:
            self.speculations.drop()
            speculation = None
        response = ResponseState(
            id=speculation.response_id if speculation else ids.response_id(),
            generation=speculation.generation if speculation else self.unit.cancel_scope.generation,
            conversation_id=self.conversation_id,
            modalities=tuple(options.get("output_modalities") or config.output_modalities),
            metadata=options.get("metadata"),
            voice=options.get("voice") or config.voice,
            output_format=self.state.output_format,
            max_output_tokens=options.get("max_output_tokens") or self.state.session.get("max_output_tokens", "inf"),
            in_conversation=options.get("conversation", "auto") != "none",
            turn_item_id=turn_item_id,
            options=options,
        )
        response.marks["created"] = time.monotonic()
        self.response = response
        self.emit(response.created())
        self._submit_when_ready()

    def _submit_when_ready(self) -> None:
        """Send the request once every committed user turn has its transcript.

        A speculation made for this response is adopted when it asked exactly
        what the response would ask now; otherwise it stops, and the request
        goes out in a new generation, so nothing of the speculation (output or
        terminal) can reach the response.
        """
        response = self.response
        if response is None or response.submitted or self.pending_transcriptions:
            return
        speculation = self.speculations.take(response.id)
        turn = self.conversation.get(response.turn_item_id) if response.turn_item_id else None
        if turn is not None and not item_text(turn).strip():
            self.speculations.cancel(speculation)
            self._finish_response("completed")  # nothing was heard: nothing to answer
            return
        request = self._request(response.id, response.generation, response.options,
                                self.conversation.history(self.settings.chat_size))
        if speculation is not None and speculation.answers(request):
            self._adopt(response, speculation)
            return
        self.speculations.cancel(speculation)
        request = replace(request, generation=self.unit.cancel_scope.generation)
        response.generation = request.generation
        response.submitted = True
        response.input_call_ids = request.input_call_ids
        self.unit.submit(request)

    def _adopt(self, response: ResponseState, speculation: Speculation) -> None:
        """The turn asked what the speculation asked: its (held) output is this response's."""
        response.generation = speculation.generation
        response.submitted = True
        response.input_call_ids = speculation.request.input_call_ids
        for item in speculation.held:
            self.dispatch_pipeline_item(item)

    def _request(self, response_id: str, generation: int, options: dict[str, Any],
                 history: tuple[ChatMessage, ...]) -> GenerateResponseRequest:
        config = self.config
        max_tokens = options.get("max_output_tokens", config.max_output_tokens)
        return GenerateResponseRequest(
            response_id=response_id,
            generation=generation,
            messages=history,
            instructions=options.get("instructions") or config.instructions,
            tools=tuple(options.get("tools", config.tools)),
            tool_choice=options.get("tool_choice", config.tool_choice),
            reasoning_effort=options.get("reasoning_effort", config.reasoning_effort),
            max_output_tokens=max_tokens if isinstance(max_tokens, int) else None,
            voice=options.get("voice") or config.voice,
            language=config.language,
            input_call_ids=self.conversation.input_call_ids(history),
            output_modalities=tuple(options.get("output_modalities") or config.output_modalities),
            metadata=options.get("metadata"),
        )

    def _finish_response(self, status: str, reason: str | None = None, error: str | None = None, *,
                         report: bool = True) -> None:
        response, self.response = self.response, None
        if response is None:
            return
        self.speculations.cancel(self.speculations.take(response.id))
        if status == "failed" and report:
            self.emit(errors.error_event(error_codes.RESPONSE_FAILED, error or "the response failed",
                                         type=error_types.SERVER_ERROR))
        answered = status == "completed" and bool(response.input_call_ids) and bool(response.output)
        if answered:
            self.tool_results.answered(response.input_call_ids)
        response.metadata = finished_metadata(response, timings=self.config.has_extension(TIMINGS_EXTENSION),
                                              answered_tool_results=answered,
                                              playback=self.playback.settle(response.id, status))
        self._end_output_audio(response, status)
        self.emit_all(response.finish(status, reason, error))
        self.playback.response_ended(response.id)
        if self.on_response_finished is not None:
            self.on_response_finished(status, response.marks)
        if status in ("incomplete", "failed"):
            self.conversation.exclude([item["id"] for item in response.output])

    def cancel_response(self, reason: str, *, requested: bool = False) -> None:
        """Steps 3 and 7 of the interruption rules: close, cancel, flush."""
        self._finish_response("cancelled", reason)
        self.unit.cancel_scope.cancel()
        self.clear_playback(requested=requested)

    def clear_playback(self, *, requested: bool = False) -> None:
        """Drop unplayed audio from the media track (if any); its items are cut at what was played."""
        self.playback.clear(requested=requested)
        self.echo.stopped()

    def _previous_item_id(self) -> str | None:
        return self.conversation.last_id

    # ------------------------------------------------------------ pipeline events

    def dispatch_pipeline_item(self, item: Any) -> None:
        """Turn one pipeline item into events; a failure here fails the response, never the session."""
        if self.speculations.hold(item):
            return
        self.last_output = time.monotonic()
        handler = _DISPATCH.get(type(item))
        if handler is None:
            log.debug("no dispatch for %s", type(item).__name__)
            return
        try:
            handler(self, item)
        except Exception as error:
            log.exception("turning %s into events failed", type(item).__name__)
            self._fail(error_codes.SERVER_ERROR, f"{type(error).__name__}: {error}", self.response)

    def fail_active(self, code: str, message: str) -> None:
        """Fail the active response (if any) with an error: a stage hung, the client cannot keep up."""
        self._fail(code, message, self.response)

    def _fail(self, code: str, message: str, response: ResponseState | None) -> None:
        """Report a server-side failure and end ``response`` (if still active) with it; the session goes on."""
        self.emit(errors.error_event(code, message, type=error_types.SERVER_ERROR))
        if response is None or response is not self.response:
            return
        self._finish_response("failed", error=message, report=False)
        if response.submitted:
            self.unit.cancel_scope.cancel()  # the rest of its output would have nowhere to go

    def _speech_started(self, item: SpeechStarted) -> None:
        self.user_speaking = True
        self.overlap.speech_started(item)  # barge-in now, or listen (overlap_policy)
        self.emit({"type": "input_audio_buffer.speech_started", "audio_start_ms": item.audio_start_ms,
                   "item_id": item.item_id})

    def _speech_stopped(self, item: SpeechStopped) -> None:
        self.emit({"type": "input_audio_buffer.speech_stopped", "audio_end_ms": item.audio_end_ms,
                   "item_id": item.item_id})
        self.user_speaking = False
        self.uncommitted_samples = 0
        answer = self.overlap.speech_stopped(item)  # False: a backchannel, or a turn deferred
        if item.item_id is not None and item.item_id not in self.conversation:
            self.commit_user_audio(item.item_id)
            td = self.config.turn_detection
            # As OpenAI's server does, the automatic response opens with the commit; it is
            # submitted once the turn's transcript is in (and adopts a matching speculation).
            if self.response is None and td is not None and td.create_response and answer:
                self.start_response({}, turn_item_id=item.item_id)
                self._note_turn_decision(item.item_id)
        self.overlap.settle()

    def _turn_decided(self, item: TurnDecision) -> None:
        if self.on_turn_decision is not None:
            self.on_turn_decision(item)
        if item.outcome != "unfinished":  # it ended the turn: the SpeechStopped that follows is its
            self._turn_decision = item

    def _note_turn_decision(self, item_id: str) -> None:
        """The automatic response of a turn the detector ended records how and when it decided."""
        decision, self._turn_decision = self._turn_decision, None
        response = self.response
        if decision is None or decision.item_id != item_id or response is None:
            return
        response.turn_decision = decision
        response.marks["turn_asked"] = decision.asked_at
        response.marks["turn_decided"] = decision.decided_at

    def commit_user_audio(self, item_id: str) -> None:
        previous = self._previous_item_id()
        user_item = {
            "id": item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_audio", "transcript": None}],
        }
        self.conversation.add(user_item)
        self.pending_transcriptions.add(item_id)
        self.emit({"type": "input_audio_buffer.committed", "previous_item_id": previous, "item_id": item_id})
        self.emit({"type": "conversation.item.added", "previous_item_id": previous, "item": dict(user_item)})

    def _transcription_delta(self, item: TranscriptionDelta) -> None:
        if item.item_id is None:
            return
        self.emit({"type": "conversation.item.input_audio_transcription.delta", "item_id": item.item_id,
                   "content_index": 0, "delta": item.delta})

    def _transcription_snapshot(self, item: TranscriptionSnapshot) -> None:
        if self.config.has_extension(SNAPSHOT_EXTENSION):
            self.emit({"type": SNAPSHOT_EXTENSION, "item_id": item.item_id, "content_index": 0,
                       "transcript": item.text})
        self._prefill(item)

    def _prefill(self, item: TranscriptionSnapshot) -> None:
        """Let the LLM read ahead the request the turn would make on the words heard so far, while the user
        goes on: at the pause only the last words are left to read. Nothing else may be in the making."""
        td = self.config.turn_detection
        if (not self.settings.prefill_during_speech or not item.text.strip() or td is None or not td.create_response
                or self.response is not None or self.speculations.current is not None or self.pending_transcriptions
                or self.overlap.listening(item.item_id)):
            return
        history = self.conversation.history(self.settings.chat_size, heard=(item.item_id, item.text))
        self.unit.submit(PromptPrefill(self._request("prefill", self.unit.cancel_scope.generation, {}, history)))

    def _transcription_completed(self, item: TranscriptionCompleted) -> None:
        item_id = item.item_id or ids.item_id()
        if item_id not in self.conversation:
            self.commit_user_audio(item_id)
        self.pending_transcriptions.discard(item_id)  # first: nothing below may leave the turn pending
        failed = item_id in self.failed_transcriptions
        self.failed_transcriptions.discard(item_id)
        user_item = self.conversation.get(item_id)
        if user_item is None:  # deleted by the client while it was being transcribed
            self._submit_when_ready()
            return
        user_item["content"][0]["transcript"] = item.transcript
        if not failed:  # a failed transcription was reported as such (transcription.failed)
            self.emit({
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": item_id,
                "content_index": 0,
                "transcript": item.transcript,
                "usage": {"type": "duration", "seconds": round(item.audio_seconds, 3)},
            })
        self.emit({"type": "conversation.item.done", "item": dict(user_item)})
        self._turn_complete(item)

    def _turn_complete(self, item: TranscriptionCompleted) -> None:
        response = self.response
        if response is not None and response.turn_item_id == item.item_id:
            if item.vad_end_time:
                response.marks["vad_end_of_speech"] = item.vad_end_time
            response.marks["stt_done"] = item.stt_done_time
        else:
            # No response took this turn's speculation over: it is of no use now.
            self.speculations.drop()
        # A turn that ends during a response it did not interrupt joins the conversation without
        # an automatic reply, as on OpenAI's server; the client may ask for one.
        self._submit_when_ready()

    def _speculate(self, item: SpeculativeTranscript) -> None:
        """Start answering the words so far, held off the wire until the turn ends (see speculation)."""
        self.unit.report_words(item)  # the turn detector weighs the words of the pause
        self._start_speculation(item)
        self.speculations.heard(item)  # no reply in the making for these words: the VAD need not wait

    def _start_speculation(self, item: SpeculativeTranscript) -> None:
        if not item.transcript.strip() or self.speculations.is_void(item) or self.overlap.listening(item.item_id):
            return
        running = self.speculations.current
        if running is not None and running.item_id == item.item_id and same_words(running.transcript,
                                                                                   item.transcript):
            return  # already answering exactly these words
        response = self.response
        if response is not None:
            # Only the response that waits for this very turn's transcript can use it.
            if response.submitted or response.turn_item_id != item.item_id:
                return
            response_id = response.id
        else:
            td = self.config.turn_detection
            if self.pending_transcriptions or td is None or not td.create_response:
                return
            response_id = ids.response_id()
        self.speculations.drop()
        history = self.conversation.history(self.settings.chat_size, heard=(item.item_id, item.transcript))
        request = self._request(response_id, self.unit.cancel_scope.generation, {}, history)
        self.speculations.start(Speculation(item.item_id, item.speculation, request))
        if response is not None:
            response.generation = request.generation
        self.unit.submit(request)

    def _speculation_voided(self, item: SpeculationVoided) -> None:
        self.speculations.void(item.item_id, item.speculation)

    def _assistant_text(self, item: TranscriptText) -> None:
        response = self._current(item)
        if response is None or not item.text:
            return
        message = self._open_message(response)
        self.emit(response.text_delta(message, item.text))
        if response.audio:  # the clause whose audio comes next (text marks)
            self.playback.spoken_text(response.id, message.item["id"], len(message.transcript))

    def _open_message(self, response: ResponseState) -> OpenMessage:
        message, events = response.open_message(self._previous_item_id())
        if events and response.in_conversation:
            self.conversation.add(message.item)
        self.emit_all(events)
        return message

    def _audio(self, item: AudioOutput) -> None:
        response = self._current(item)
        if response is None or not response.audio:
            return
        message = self._open_message(response)
        response.marks.setdefault("first_audio_sent", time.monotonic())
        self.playback.produced(response.id, message.item["id"], item.samples)
        if self.media is not None:
            return  # the track plays it
        self.echo.sent(item.samples, message.item["id"])
        self.emit(response.audio_delta(message, self.audio.encode_output(item.samples),
                                       self.playback.delta_metadata(response.id, message.item["id"])))

    def _visemes(self, item: AudioVisemes) -> None:
        """The visemes extension: sent just before the audio chunk they describe (docs/visemes.md)."""
        response = self._current(item)
        if response is None or not response.audio or not self.config.has_extension(VISEMES_EXTENSION):
            return
        message = self._open_message(response)
        self.emit(response.visemes(message, self.playback.produced_ms(message.item["id"]), item))

    def _end_output_audio(self, response: ResponseState, status: str) -> None:
        """The resampler's held-back tail ends this response (dropped if cancelled), never the next."""
        tail = self.audio.end_output(keep_tail=status != "cancelled" and response.message is not None)
        if tail is not None and response.message is not None:
            self.emit(response.audio_delta(response.message, tail,
                                           self.playback.delta_metadata(response.id, response.message.item["id"])))

    def _tool_call(self, item: AssistantToolCallPart) -> None:
        response = self._current(item)
        if response is None:
            return
        call, events = response.function_call(item.call_id, item.name, item.arguments, self._previous_item_id())
        if response.in_conversation:
            self.conversation.add(call)
        self.emit_all(events)

    def _usage(self, item: TokenUsage) -> None:
        response = self._current(item)
        if response is not None:
            response.usage_in += item.input_tokens
            response.usage_out += item.output_tokens

    def _first_token(self, item: LLMFirstToken) -> None:
        response = self._current(item)
        if response is not None:
            response.marks["llm_first_token"] = item.time

    def _first_audio(self, item: TTSFirstAudio) -> None:
        response = self._current(item)
        if response is not None:
            response.marks["tts_first_audio"] = item.time

    def _response_done(self, item: ResponseDone) -> None:
        # The terminal of the response's own request only: a cancelled request of the same id
        # (a speculation that was not adopted) ends in an older generation.
        response = self.response
        if response is not None and response.submitted and response.owns(item):
            self._finish_response(item.status, item.reason, item.error)
            self.overlap.response_ended(response.id)

    def _stage_error(self, item: StageError) -> None:
        log.warning("pipeline stage %s failed: %s", item.stage, item.message)
        if item.retried:
            return
        response = self.response
        if item.response_id is not None:  # output of a request: its response, unless that was cancelled
            response = self._current(item)
            if response is None:
                return
        elif response is not None and (response.submitted or item.item_id is None
                                       or response.turn_item_id != item.item_id):
            response = None  # an input-side failure concerns only the response waiting for that turn
        code, message = error_codes.stage_failed(item.stage), f"{item.stage} failed: {item.message}"
        turn = item.item_id if item.item_id in self.pending_transcriptions else None
        if turn is not None:
            self.failed_transcriptions.add(turn)
            self.emit({"type": "conversation.item.input_audio_transcription.failed", "item_id": turn,
                       "content_index": 0,
                       "error": {"type": error_types.SERVER_ERROR, "code": code, "message": message, "param": None}})
        elif response is None and not self._stage_errors.due(item.stage):
            return  # a stage failing on every chunk (the VAD, say) is reported now and then, not each time
        self._fail(code, message, response)

    def _current(self, item: Any) -> ResponseState | None:
        """The active response if ``item`` is output of its request and not stale."""
        response = self.response
        if response is None or not response.owns(item) or self.unit.cancel_scope.is_stale(item.generation):
            return None
        return response


_DISPATCH: dict[type, Callable[[RealtimeService, Any], None]] = {
    SpeechStarted: RealtimeService._speech_started,
    SpeechStopped: RealtimeService._speech_stopped,
    SpeechOngoing: lambda service, item: service.overlap.speech_ongoing(item),
    TurnDecision: RealtimeService._turn_decided,
    TranscriptionDelta: RealtimeService._transcription_delta,
    TranscriptionSnapshot: RealtimeService._transcription_snapshot,
    TranscriptionCompleted: RealtimeService._transcription_completed,
    TranscriptText: RealtimeService._assistant_text,
    AudioOutput: RealtimeService._audio,
    AudioVisemes: RealtimeService._visemes,
    AssistantToolCallPart: RealtimeService._tool_call,
    TokenUsage: RealtimeService._usage,
    LLMFirstToken: RealtimeService._first_token,
    TTSFirstAudio: RealtimeService._first_audio,
    ResponseDone: RealtimeService._response_done,
    StageError: RealtimeService._stage_error,
    SpeculativeTranscript: RealtimeService._speculate,
    SpeculationVoided: RealtimeService._speculation_voided,
}
