"""RealtimeService: one session's protocol state over one pipeline unit, put together.

The service builds a session's parts and gives each its collaborators once,
at construction: the session object (wire/session.py), the conversation, the
input buffer and user turns (conversation/user_input.py), the response's life
(conversation/responses.py), the overlap gate (conversation/overlap.py), the playback ledger
(conversation/playback.py), the speculation slot (conversation/speculation.py), session patches
(service/session_updates.py), and the translation of pipeline items into events
(service/pipeline_events.py, service/turn_events.py, service/response_events.py). Client events come
in through :meth:`handle_client_event` (service/client_events.py, which acts on the
parts, never on the service), pipeline output through
:meth:`dispatch_pipeline_item`; both run on the event loop thread, so the
state needs no locks. The server's metrics are not handed to the parts: they
listen to the ones that know what they count (:class:`SessionMetrics`). Every
server event leaves through one ``emit``, which stamps it. Nothing here
awaits: the transport writer drains what is emitted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any, Protocol, cast

import numpy as np

from speech_to_speech import ids
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.turn_taking import TurnDecision
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.protocol import ECHO_CANCELLATION_EXTENSION
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.session import SessionAttachment, session_created
from speech_to_speech.realtime.connection.transport import MediaTrack
from speech_to_speech.realtime.connection.wire_audio import WireAudio
from speech_to_speech.realtime.conversation.echo import SessionEcho, echo_cancellation_available
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.overlap import OverlapGate
from speech_to_speech.realtime.conversation.overlap_judge import OverlapJudge
from speech_to_speech.realtime.conversation.playback import Playback
from speech_to_speech.realtime.conversation.response import ResponseState
from speech_to_speech.realtime.conversation.responses import ResponseListener, Responses
from speech_to_speech.realtime.conversation.speculation import SpeculationSlot
from speech_to_speech.realtime.conversation.take_back import TakeBack
from speech_to_speech.realtime.conversation.user_input import UserInput
from speech_to_speech.realtime.service.client_events import (
    ClientEvents,
    InputClientEvents,
    ItemClientEvents,
    ResponseClientEvents,
    SessionClientEvents,
)
from speech_to_speech.realtime.service.pipeline_events import PipelineEvents
from speech_to_speech.realtime.service.response_events import ResponseEvents
from speech_to_speech.realtime.service.session_events import SessionControl
from speech_to_speech.realtime.service.session_updates import SessionUpdates
from speech_to_speech.realtime.service.turn_events import TurnEvents
from speech_to_speech.realtime.tools.session_tools import SessionTools
from speech_to_speech.realtime.wire import errors
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.events import ClientEvent, EventLimits
from speech_to_speech.realtime.wire.session import OVERLAP_DEFAULTS, SessionState
from speech_to_speech.realtime.wire.voices import VoiceCatalog
from speech_to_speech.units.unit import PipelineUnit


def stamping(send: Callable[[ServerEvent], None]) -> Callable[[ServerEvent], None]:
    """``send`` behind the one place that gives a server event its ``event_id`` (unless it has one)."""

    def emit(event: ServerEvent) -> None:
        if "event_id" not in event:
            # The same event with its id first: a field of the envelope, which no event's type names.
            event = cast(ServerEvent, {"event_id": ids.event_id(), **event})
        send(event)

    return emit


class SessionMetrics(ResponseListener, Protocol):
    """What the server counts of a session (realtime/metrics.py): it listens to the parts that know it."""

    def turn_decided(self, decision: TurnDecision) -> None: ...

    def echo_cancelled(self, audio_s: float, cpu_s: float) -> None: ...


class RealtimeService:
    def __init__(
        self,
        unit: PipelineUnit,
        settings: ServerSettings,
        send: Callable[[ServerEvent], None],
        *,
        media: MediaTrack | None = None,
        validate_language: Callable[[str | None, str | None], str | None] | None = None,
        session_control: SessionControl | None = None,
        metrics: SessionMetrics | None = None,
    ) -> None:
        """``session_control``: the live session around this service (heartbeat, event_ack, close); None: not
        served. ``metrics``: the server's, told how responses end, replies taken back, the turn detector's
        decisions and the echo canceller's work."""
        self.unit = unit
        self.settings = settings
        self.emit = emit = stamping(send)
        # WebSocket carries audio as events; WebRTC plays it on a media track instead.
        self.media = media
        self.state = state = SessionState.for_server(settings, semantic_turns=unit.detects_turns,
                                                     voices=VoiceCatalog(unit.voices))
        state.publish_to(unit.config.replace)  # the pipeline threads read the unit's copy of its runtime config
        self.conversation = conversation = Conversation(settings.limits.max_conversation_items)
        self.event_limits = EventLimits(settings.limits.max_event_bytes, settings.limits.max_event_depth)
        # When the client last sent anything (an event, media audio): the clock of the idle timeout
        # (sessions/guard.py).
        self.last_activity = time.monotonic()
        # The last client event taken that a client would send again after a lost connection
        # (session.resumed says it: protocol/resume.py).
        self.last_client_event_id: str | None = None
        self._session_control = session_control
        self.audio = audio = WireAudio(lambda: state.input_format, lambda: state.output_format)
        self.echo = echo = SessionEcho(lambda: echo_cancellation_available() and media is None and (
            settings.vad.echo_cancellation == "server" or state.config.has_extension(ECHO_CANCELLATION_EXTENSION)),
            on_cancelled=metrics.echo_cancelled if metrics is not None else None)
        # What the user heard of each assistant item; with a media track, also what it played. The one place
        # told where the client's speaker is: the echo canceller follows it.
        self.playback = playback = Playback(conversation, emit, media, policy=lambda: state.playback_commit_policy,
                                            listener=echo, wire=audio)
        # Failures that may come with every chunk (a stage's, a media track's audio over the caps) are
        # reported now and then, not each time.
        self._stage_errors = stage_errors = errors.Throttle(errors.STAGE_ERROR_INTERVAL_S)
        self.speculations = speculations = SpeculationSlot(unit.cancel_scope, vad=unit)
        self.user_input = user_input = UserInput(
            unit, settings, state, conversation=conversation, speculations=speculations, audio=audio, echo=echo,
            emit=emit)
        self.responses = responses = Responses(
            unit, settings, state, conversation=conversation, user_input=user_input,
            speculations=speculations, playback=playback, emit=emit)
        # The tools the server runs itself (MCP servers) and the preamble while a reply waits.
        self.tools = tools = SessionTools(unit, settings, state, conversation=conversation, playback=playback,
                                          responses=responses, emit=emit,
                                          on_listed=lambda: self.pipeline_events.dispatch_adopted())
        # What speech over the assistant does (overlap_policy).
        self.overlap = overlap = OverlapGate(responses, state, emit=emit,
                                             going_on_ms=settings.turns.take_back_within_ms)
        self.updates = SessionUpdates(state, responses=responses, validate_language=validate_language)
        turns = TurnEvents(state, user_input=user_input,
                           responses=responses, speculations=speculations, overlap=overlap,
                           take_back=TakeBack(responses, settings.turns.take_back_within_ms), emit=emit)
        output = ResponseEvents(responses, state, user_input=user_input, playback=playback, overlap=overlap,
                                emit=emit, stage_errors=stage_errors)
        judge = OverlapJudge(overlap, cap_ms=lambda: int(state.session.get(
            "overlap_barge_in_ms", OVERLAP_DEFAULTS["overlap_barge_in_ms"])), probe=unit.probe_speech,
            pause_words=speculations.held_pause)
        self.pipeline_events = PipelineEvents(turns, output, responses=responses, speculations=speculations,
                                              overlap_judge=judge)
        # Each group of client events acts on its own few parts (service/client_events.py).
        input_events = InputClientEvents(user_input, on_track=media is not None)
        self._client_events = ClientEvents(
            [SessionClientEvents(self.updates, emit, session_control=session_control, tools=tools),
             input_events,
             ItemClientEvents(conversation, playback, emit, tools=tools),
             ResponseClientEvents(responses, state, user_input, playback, emit)],
            decode_append=input_events.decode, limits=self.event_limits, emit=emit)
        if metrics is not None:
            responses.listen(metrics)
            self.pipeline_events.listen(TurnDecision, metrics.turn_decided)

    @property
    def config(self) -> RuntimeConfig:
        return self.state.config

    @property
    def conversation_id(self) -> str:
        return self.responses.conversation_id

    @property
    def response(self) -> ResponseState | None:
        """The active response, if any."""
        return self.responses.active

    @property
    def pending_transcriptions(self) -> AbstractSet[str]:
        """Committed user turns whose transcript is not in yet."""
        return self.user_input.pending_transcriptions

    @property
    def last_output(self) -> float:
        """When the pipeline last produced anything: the clock of the stalled-response guard."""
        return self.pipeline_events.last_output

    def start(self, attachment: SessionAttachment | None = None, session_fields: dict[str, Any] | None = None) -> None:
        """``session.created``, with the ``attachment`` it opens on (session_id, resume_token) and
        ``session_fields`` added to its session.

        Its capabilities also list the voices a client may choose (the TTS's own, where it can list them)."""
        session = {**self.state.session, **(session_fields or {})}
        capabilities, voices = session.get("capabilities"), self.state.voices.installed
        if isinstance(capabilities, dict) and voices is not None:
            session["capabilities"] = {**capabilities, "voices": list(voices)}
        self.emit(session_created(session, attachment))
        self.tools.session_changed()  # the server's own MCP servers (--mcp_server) are listed at once

    def restore_session(self, session: dict[str, Any], last_client_event_id: str | None) -> None:
        """Become the session a store kept (sessions/restore.py): its session object, and the last client event
        it took."""
        self.state.restore(session)
        self.last_client_event_id = last_client_event_id

    async def aclose(self) -> None:
        """The session ended: its MCP connections close (a local server's process exits), calls stop."""
        await self.tools.aclose()

    # ------------------------------------------------------------ client events

    def prepare_client_event(self, raw: str | bytes | dict[str, Any]) -> ClientEvent | RealtimeError:
        """Parse ``raw`` and decode an append's audio (may run off the event loop; see client_events)."""
        return self._client_events.prepare(raw)

    def handle_client_event(self, raw: str | bytes | dict[str, Any] | ClientEvent | RealtimeError) -> None:
        """Apply one client event (raw, or as :meth:`prepare_client_event` left it); rejections become errors."""
        self.last_activity = time.monotonic()
        taken = self._client_events.apply(raw)
        self.pipeline_events.dispatch_adopted()  # what a response it let go on adopted, once the event is done
        if taken is not None:
            self.last_client_event_id = taken
            if self._session_control is not None:
                self._session_control.client_event_taken()

    def configure(self, session: Any, event_id: str | None = None) -> None:
        """Apply a session patch (the session a WebRTC call opens with); raises RealtimeError."""
        self.updates.configure(session, event_id)
        self.tools.session_changed()

    def push_input(self, samples_16k: np.ndarray) -> None:
        """16 kHz float32 user audio from any transport (a media track's over the caps is dropped and reported
        now and then; a WebSocket append was checked as a client event)."""
        self.last_activity = time.monotonic()
        if self.media is not None and (refusal := self.user_input.refusal(len(samples_16k))) is not None:
            if self._stage_errors.due(refusal.code):
                self.emit(refusal.to_event())
            return
        self.user_input.push(samples_16k)

    # ------------------------------------------------------------ pipeline output

    def dispatch_pipeline_item(self, item: Any) -> None:
        """Turn one pipeline item into events; a failure here fails the response, never the session."""
        self.pipeline_events.dispatch(item)

    def fail_active(self, code: str, message: str) -> None:
        """Fail the active response (if any) with an error: a stage hung, the client cannot keep up."""
        self.responses.fail(code, message, self.responses.active)
