"""How a session runs speculative responses (see ``speculation``): start, hold, adopt, drop.

A mixin of RealtimeService: it shares the session's state, declared below,
and keeps this one idea out of the service's other concerns.
"""

from __future__ import annotations

from typing import Any

from speech_to_speech import ids
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages import (
    ChatMessage,
    GenerateResponseRequest,
    SpeculativeTranscript,
    SpeechResumed,
)
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.pipeline.unit import PipelineUnit
from speech_to_speech.realtime.conversation import Conversation
from speech_to_speech.realtime.response import ResponseState
from speech_to_speech.realtime.speculation import Speculation


class SpeculativeResponses:
    unit: PipelineUnit
    settings: ServerSettings
    conversation: Conversation
    response: ResponseState | None
    speculation: Speculation | None
    pending_transcriptions: set[str]

    @property
    def config(self) -> RuntimeConfig:
        return self.unit.config.current

    def dispatch_pipeline_item(self, item: Any) -> None:
        raise NotImplementedError

    def _request(self, response_id: str, generation: int, options: dict[str, Any],
                 history: tuple[ChatMessage, ...]) -> GenerateResponseRequest:
        raise NotImplementedError

    def _adopt(self, response: ResponseState, speculation: Speculation) -> None:
        """The turn said what the speculation heard: its (held) output is this response's."""
        response.submitted = True
        response.input_call_ids = speculation.input_call_ids
        for item in speculation.held:
            self.dispatch_pipeline_item(item)

    def _speculate(self, item: SpeculativeTranscript) -> None:
        if not item.transcript.strip():
            return
        response = self.response
        if response is not None:
            # The turn ended before its speculative transcript came: its response is open and
            # waits for the final one, which will say the same. Start on these words now.
            if not response.submitted and response.turn_item_id == item.item_id and response.speculation is None:
                response.speculation = self._launch(item, response.id, response.generation)
            return
        td = self.config.turn_detection
        if self.pending_transcriptions or td is None or not td.create_response:
            return
        self._drop_speculation()
        self.speculation = self._launch(item, ids.response_id(), self.unit.cancel_scope.generation)

    def _launch(self, item: SpeculativeTranscript, response_id: str, generation: int) -> Speculation:
        history = (*self.conversation.history(self.settings.chat_size), ChatMessage("user", item.transcript))
        request = self._request(response_id, generation, {}, history)
        self.unit.submit(request)
        return Speculation(item.item_id, item.transcript, response_id, generation, request.input_call_ids)

    def _speech_resumed(self, item: SpeechResumed) -> None:
        if self.speculation is not None and self.speculation.item_id == item.item_id:
            self._drop_speculation()

    def _drop_speculation(self) -> None:
        """The user went on (or said something else): the speculative output is stale."""
        speculation, self.speculation = self.speculation, None
        self._discard(speculation)

    def _discard(self, speculation: Speculation | None) -> None:
        if speculation is not None and not self.unit.cancel_scope.is_stale(speculation.generation):
            self.unit.cancel_scope.cancel()

    def _pending_speculation(self) -> Speculation | None:
        response = self.response
        if response is not None and not response.submitted:
            return response.speculation
        return self.speculation

    def _hold(self, item: Any) -> bool:
        """Keep a speculative response's output off the wire until its turn is confirmed."""
        speculation = self._pending_speculation()
        if speculation is None or getattr(item, "response_id", None) != speculation.response_id:
            return False
        speculation.held.append(item)
        return True
