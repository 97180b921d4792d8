"""ClientSession: what the client does with each server event (no I/O of its own).

The runner feeds it server events and drains what it sends, so tests can
drive it with scripted events and read back the client events it produced.
Playback rules (the spec's "Turning off barge-in from a client"): clear on
``speech_started`` only when interruption is on; always on a cancelled
``response.done`` or ``output_audio_buffer.cleared``; a cut item is
truncated at the position that was actually played. A server that advertises
``supports_playback_ack`` is also told, as the audio plays, how far each item
was heard (``playback.ack``, see playback_acks.py).
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable

import numpy as np

from speech_to_speech.client.config import RealtimeAudioClientConfig
from speech_to_speech.client.errors import SessionLimitReached, SessionRejected
from speech_to_speech.client.playback import Cut, Playback
from speech_to_speech.client.playback_acks import PlaybackAcks
from speech_to_speech.client.tool_scheduler import ToolCoordinator
from speech_to_speech.client.transcript import TranscriptView
from speech_to_speech.protocol import Event, error_types
from speech_to_speech.protocol.error_codes import RESPONSE_FAILED, SESSION_LIMIT_REACHED
from speech_to_speech.protocol.metadata import AUDIO_DURATION_KEY

log = logging.getLogger(__name__)

# Speakers keep sounding briefly after the buffer empties; the mic stays blocked that long.
BLOCK_MIC_TAIL_S = 0.3


class ClientSession:
    def __init__(self, config: RealtimeAudioClientConfig, playback: Playback, send: Callable[[Event], str],
                 *, view: TranscriptView | None = None, tools: ToolCoordinator | None = None,
                 on_event: Callable[[Event], None] | None = None) -> None:
        self.config = config
        self.on_event = on_event
        self.playback = playback
        self._send = send
        self.view = view
        self.tools = tools
        self.session_update_id: str | None = None
        self.responses: list[Event] = []  # every response.done body, in order
        self.user_transcripts: dict[str, str] = {}
        self._user_speaking = False
        self._untranscribed: set[str] = set()  # committed user items without their completed
        self._active_response: str | None = None
        self._speaking_until = 0.0
        self.acks = PlaybackAcks()

    def send(self, event: Event) -> str:
        return self._send(event)

    def start(self) -> None:
        self.session_update_id = self.send(self.config.session_update())

    # ------------------------------------------------------------ events

    def handle(self, event: Event) -> None:
        kind = event.get("type")
        if kind == "error":
            self._error(event.get("error") or {})
        elif kind == "session.created":
            self.acks.capabilities((event.get("session") or {}).get("capabilities") or {})
        elif kind == "response.output_audio.delta":
            pcm = np.frombuffer(base64.b64decode(event.get("delta") or ""), dtype="<i2")
            self.playback.feed(str(event.get("response_id")), str(event.get("item_id")), pcm)
            self.acks.audio_duration(str(event.get("item_id")), (event.get("metadata") or {}).get(AUDIO_DURATION_KEY))
        elif kind == "response.output_audio.done":
            self.playback.audio_done(str(event.get("item_id")))
        elif kind == "input_audio_buffer.speech_started":
            self._user_speaking = True
            if self.config.interrupt_response:
                self._truncate(self.playback.clear())
        elif kind in ("input_audio_buffer.speech_stopped", "input_audio_buffer.committed"):
            self._user_speaking = False
            if kind == "input_audio_buffer.committed":
                self._untranscribed.add(str(event.get("item_id")))
        elif kind == "conversation.item.input_audio_transcription.completed":
            self._untranscribed.discard(str(event.get("item_id")))
            self.user_transcripts[str(event.get("item_id"))] = str(event.get("transcript") or "")
        elif kind == "output_audio_buffer.cleared":
            self._truncate(self.playback.clear())
        elif kind == "response.created":
            self._active_response = str((event.get("response") or {}).get("id"))
            self._untranscribed.clear()  # answered: servers without input transcription send no completed
        elif kind == "response.done":
            self._response_done(event.get("response") or {})
        if self.tools is not None:
            self.tools.handle(event)
        if self.view is not None:
            self.view.handle(event)
        if self.on_event is not None:
            self.on_event(event)

    def _response_done(self, response: Event) -> None:
        response_id = str(response.get("id"))
        if response.get("status") == "cancelled":
            self._truncate(self.playback.clear(response_id))
        self.playback.response_done(response_id)
        if self._active_response == response_id:
            self._active_response = None
        self.responses.append(response)

    def _truncate(self, cuts: list[Cut]) -> None:
        for cut in cuts:
            self.send({"type": "conversation.item.truncate", "item_id": cut.item_id, "content_index": 0,
                       "audio_end_ms": cut.audio_end_ms})
        if cuts:
            self.report_playback()  # a cut item is settled: its last play head goes out now, after the truncate

    def report_playback(self, now: float | None = None) -> None:
        """Send the ``playback.ack``s due now (the runner calls this as the audio plays)."""
        for ack in self.acks.due(self.playback.progress(), time.monotonic() if now is None else now):
            self.send(ack)

    def _error(self, error: Event) -> None:
        code, message = error.get("code"), str(error.get("message") or error)
        if code == SESSION_LIMIT_REACHED:
            raise SessionLimitReached(f"the server is at its session limit: {message}")
        if self.session_update_id is not None and error.get("event_id") == self.session_update_id:
            raise SessionRejected(f"the server rejected our session settings: {message}")
        if error.get("type") == error_types.SERVER_ERROR and code not in (None, RESPONSE_FAILED):
            log.warning("server error: %s", message)
        else:
            log.info("server error event: %s (%s)", message, code)

    # ------------------------------------------------------------ state

    def mic_blocked(self) -> bool:
        """--block-mic-during-playback: nothing is sent while the assistant speaks (plus a short tail)."""
        if not self.config.block_mic_during_playback:
            return False
        now = time.monotonic()
        if self.playback.speaking:
            self._speaking_until = now + BLOCK_MIC_TAIL_S
        return now < self._speaking_until

    @property
    def idle(self) -> bool:
        """Nothing in flight: no turn open or untranscribed, no response, tool or audio pending."""
        return not (
            self._user_speaking
            or self._untranscribed
            or self._active_response is not None
            or (self.tools is not None and self.tools.busy)
            or self.playback.speaking
        )

