"""The user's turn as the pipeline reports it, turned into Realtime events and what they set off.

:class:`TurnEvents` takes the VAD's, the turn detector's and the STT's items
(speech started, ongoing and stopped, turn decisions, transcription deltas,
snapshots and completions, speculative transcripts and their voiding) and
sends the ``input_audio_buffer.*`` and ``conversation.item.input_audio_transcription.*``
events for them. Around those events it applies the session's rules: speech
over the assistant goes through the overlap gate, a turn the VAD ends opens
the automatic response, a finished transcript lets a waiting response be
submitted, a pause's words start a speculative reply (conversation/speculation.py), speech
right after a turn may take its reply back (conversation/take_back.py), and the words heard
so far let the LLM read ahead (prefill).
"""

from __future__ import annotations

from collections.abc import Callable

from speech_to_speech import ids
from speech_to_speech.pipeline.messages.input_audio import (
    SpeculationVoided,
    SpeechOngoing,
    SpeechStarted,
    SpeechStopped,
)
from speech_to_speech.pipeline.messages.transcription import (
    SpeculativeTranscript,
    TranscriptionCompleted,
    TranscriptionDelta,
    TranscriptionSnapshot,
)
from speech_to_speech.pipeline.messages.turn_taking import TurnDecision
from speech_to_speech.protocol import SNAPSHOT_EXTENSION
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.conversation import conversation_item_done
from speech_to_speech.protocol.server_events.input_audio import (
    input_audio_buffer_speech_started,
    input_audio_buffer_speech_stopped,
    input_audio_transcription_completed,
    input_audio_transcription_delta,
    input_audio_transcription_snapshot,
)
from speech_to_speech.realtime.conversation.overlap import OverlapGate
from speech_to_speech.realtime.conversation.responses import Responses
from speech_to_speech.realtime.conversation.speculation import SpeculationSlot, same_words
from speech_to_speech.realtime.conversation.take_back import TakeBack
from speech_to_speech.realtime.conversation.user_input import UserInput
from speech_to_speech.realtime.wire.session import SessionState


class TurnEvents:
    """The user-side pipeline items of one session, each turned into its events (runs on the event loop)."""

    def __init__(self, state: SessionState, *, user_input: UserInput, responses: Responses,
                 speculations: SpeculationSlot, overlap: OverlapGate, take_back: TakeBack,
                 emit: Callable[[ServerEvent], None]) -> None:
        self._state = state
        self._input = user_input
        self._responses = responses
        self._speculations = speculations
        self._overlap = overlap
        self._take_back = take_back
        self._emit = emit
        self._turn_decision: TurnDecision | None = None  # how the detector ended the last turn

    # ------------------------------------------------------------ speech

    def speech_started(self, item: SpeechStarted) -> None:
        self._input.speech_started()
        self._take_back.speech_started(item)  # the user went on with the request just answered
        self._overlap.speech_started(item)  # barge-in now, or listen (overlap_policy)
        self._emit(input_audio_buffer_speech_started(item.audio_start_ms, item.item_id))

    def speech_ongoing(self, item: SpeechOngoing) -> None:
        self._overlap.speech_ongoing(item)

    def speech_stopped(self, item: SpeechStopped) -> None:
        self._emit(input_audio_buffer_speech_stopped(item.audio_end_ms, item.item_id))
        self._input.speech_stopped()
        answer = self._overlap.speech_stopped(item)  # False: a backchannel, or a turn deferred
        if item.item_id is not None and self._input.committed(item.item_id):
            td = self._state.config.turn_detection
            # As OpenAI's server does, the automatic response opens with the commit; it is
            # submitted once the turn's transcript is in (and adopts a matching speculation).
            if self._responses.active is None and td is not None and td.create_response and answer:
                self._responses.start({}, turn_item_id=item.item_id)
                self._note_turn_decision(item.item_id)
        self._overlap.settle()

    def turn_decided(self, item: TurnDecision) -> None:
        if item.outcome != "unfinished":  # it ended the turn: the SpeechStopped that follows is its
            self._turn_decision = item

    def _note_turn_decision(self, item_id: str) -> None:
        """The automatic response of a turn the detector ended records how and when it decided."""
        decision, self._turn_decision = self._turn_decision, None
        response = self._responses.active
        if decision is None or decision.item_id != item_id or response is None:
            return
        response.decided(decision)

    # ------------------------------------------------------------ transcription

    def transcription_delta(self, item: TranscriptionDelta) -> None:
        if item.item_id is None:
            return
        self._emit(input_audio_transcription_delta(item.item_id, item.delta))

    def transcription_snapshot(self, item: TranscriptionSnapshot) -> None:
        if self._state.config.has_extension(SNAPSHOT_EXTENSION):
            self._emit(input_audio_transcription_snapshot(item.item_id, item.text))
        self._prefill(item)

    def _prefill(self, item: TranscriptionSnapshot) -> None:
        """The LLM reads ahead the request the turn would make on the words heard so far, when the turn would
        get an automatic reply. Nothing else may be in the making."""
        td = self._state.config.turn_detection
        if (not item.text.strip() or td is None
                or not td.create_response or self._responses.active is not None
                or self._speculations.current is not None
                or self._input.pending_transcriptions or self._overlap.listening(item.item_id)):
            return
        self._responses.read_ahead_heard(item.item_id, item.text)

    def transcription_completed(self, item: TranscriptionCompleted) -> None:
        item_id = item.item_id or ids.item_id()
        self._input.committed(item_id)
        user_item, failed = self._input.transcribed(item_id, item.transcript)
        if user_item is None:  # deleted by the client while it was being transcribed
            self._responses.submit_when_ready()
            return
        self._responses.heard(item.language)
        if not failed:  # a failed transcription was reported as such (transcription.failed)
            self._emit(input_audio_transcription_completed(item_id, item.transcript, item.audio_seconds))
        self._emit(conversation_item_done(user_item))
        self._turn_complete(item)

    def _turn_complete(self, item: TranscriptionCompleted) -> None:
        response = self._responses.active
        if response is not None and response.turn_item_id == item.item_id:
            if item.ended.vad:
                response.mark("vad_end_of_speech", item.ended.vad)
                response.mark("speech_end", item.ended.speech)
            response.mark("stt_done", item.stt_done_time)
        else:
            # No response took this turn's speculation over: it is of no use now.
            self._speculations.drop()
        # A turn that ends during a response it did not interrupt joins the conversation without
        # an automatic reply, as on OpenAI's server; the client may ask for one.
        self._responses.submit_when_ready()

    # ------------------------------------------------------------ speculation

    def speculate(self, item: SpeculativeTranscript) -> None:
        """Start answering the words so far, held off the wire until the turn ends (see speculation)."""
        self._speculations.pause_words(item)  # the turn detector weighs the words of the pause
        self._start_speculation(item)
        self._speculations.heard(item)  # no reply in the making for these words: the VAD need not wait

    def _start_speculation(self, item: SpeculativeTranscript) -> None:
        speculations = self._speculations
        if not item.transcript.strip() or speculations.is_void(item) or self._overlap.listening(item.item_id):
            return
        running = speculations.current
        if running is not None and running.item_id == item.item_id and same_words(running.transcript,
                                                                                   item.transcript):
            return  # already answering exactly these words
        response = self._responses.active
        if response is not None:
            # Only the response that waits for this very turn's transcript can use it.
            if response.submitted or response.turn_item_id != item.item_id:
                return
        else:
            td = self._state.config.turn_detection
            if self._input.pending_transcriptions or td is None or not td.create_response:
                return
        self._responses.speculate(item, response)

    def speculation_voided(self, item: SpeculationVoided) -> None:
        self._speculations.void(item.item_id, item.speculation)
