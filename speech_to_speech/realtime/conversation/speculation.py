"""Speculative responses: start answering at a pause, speak only once the turn is over.

When the VAD sees a pause that may end the user's turn, the STT transcribes
the speech so far and the service asks the LLM for a reply to it at once.
The reply's output is held back, off the wire, until the turn really ends:
if the request the turn's response would make is the one the speculation
made (same history, same words up to casing and punctuation), the held
output becomes the response's (already generated, or well under way);
otherwise the speculation is cancelled like any stale output.

There is at most one speculation at a time, and while it runs it is the only
live request of the unit: it is launched only when no submitted response is
active, and a response is never submitted while it runs (it adopts it or
drops it first). So dropping it may cancel the unit's generation without
touching anything else.

Under ``semantic_vad`` the VAD ends a turn judged finished only once the
reply to the pause's words is ready to play: the slot tells it (``ReplyReady``
through its ``vad``) when the speculation's first audio is held, when it
ends without audio, when it is dropped, or when no speculation answers the
words at all, so the VAD never waits for a reply that will not come.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol

from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.messages.control import StageError
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest, ResponseDone
from speech_to_speech.pipeline.messages.ownership import ResponseOwned
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TranscriptText
from speech_to_speech.pipeline.messages.transcription import SpeculativeTranscript
from speech_to_speech.pipeline.messages.turn_taking import ReplyReady
from speech_to_speech.pipeline.words import normalize_word


class PauseFeedback(Protocol):
    """Where a pause's words and its reply's readiness go back to the VAD's turn decision (the unit's
    ``vad_input``; a unit whose VAD weighs no turns ignores them)."""

    def report_words(self, words: SpeculativeTranscript) -> None: ...

    def report_reply_ready(self, ready: ReplyReady) -> None: ...


@dataclass
class Speculation:
    item_id: str | None
    number: int  # of the speculative utterance within its turn (SpeculationVoided voids by number)
    request: GenerateResponseRequest
    # Pipeline output of the speculative request, in order, not yet on the wire.
    held: list[Any] = field(default_factory=list)
    ready: bool = False  # its reply could play now (ReplyReady went out)
    # The speculative utterance whose words it answers now (a later pause may repeat the same words).
    awaited: int = 0

    def __post_init__(self) -> None:
        self.awaited = self.awaited or self.number

    @property
    def response_id(self) -> str:
        return self.request.response_id

    @property
    def generation(self) -> int:
        return self.request.generation

    @property
    def transcript(self) -> str:
        return self.request.messages[-1].content

    def owns(self, item: Any) -> bool:
        """Output of this speculative request (the same id may be asked again, in a later generation)."""
        return (isinstance(item, ResponseOwned | StageError) and item.response_id == self.response_id
                and item.generation == self.generation)

    def answers(self, request: GenerateResponseRequest) -> bool:
        """True when ``request`` asks what the speculation asked: its output answers it."""
        mine, theirs = self.request, request
        if len(mine.messages) != len(theirs.messages) or not theirs.messages:
            return False
        if mine.messages[:-1] != theirs.messages[:-1] or theirs.messages[-1].role != "user":
            return False
        if not same_words(mine.messages[-1].content, theirs.messages[-1].content):
            return False
        return dataclasses.replace(mine, response_id="", generation=0, messages=()) == dataclasses.replace(
            theirs, response_id="", generation=0, messages=())


def same_words(a: str, b: str) -> bool:
    """Equal up to casing and edge punctuation: what the LLM was asked is what was said."""
    return [normalize_word(w) for w in a.split()] == [normalize_word(w) for w in b.split()]


class SpeculationSlot:
    """The session's one speculation, and which speculative utterances the user voided.

    A ``SpeculationVoided`` comes straight from the VAD while the transcript of
    the speculation it voids still waits in the STT, so it can arrive first:
    the slot remembers the highest voided number of the current turn and
    refuses transcripts up to it.
    """

    def __init__(self, cancel_scope: CancelScope, vad: PauseFeedback | None = None) -> None:
        self._scope = cancel_scope
        self._vad = vad  # the one place a pause's words and its reply's readiness go back to the VAD
        self.current: Speculation | None = None
        self._voided: tuple[str | None, int] = (None, 0)

    def void(self, item_id: str | None, number: int) -> None:
        self._voided = (item_id, number)
        current = self.current
        if current is not None and current.item_id == item_id and current.number <= number:
            self.drop()

    def is_void(self, transcript: SpeculativeTranscript) -> bool:
        item_id, number = self._voided
        return transcript.item_id == item_id and transcript.speculation <= number

    def start(self, speculation: Speculation) -> None:
        self.drop()
        self.current = speculation

    def take(self, response_id: str) -> Speculation | None:
        """The speculation made for ``response_id``, leaving the slot empty; None if there is none."""
        current = self.current
        if current is None or current.response_id != response_id:
            return None
        self.current = None
        return current

    def drop(self) -> None:
        """Cancel the running speculation, if any (the user went on, or said something else)."""
        current, self.current = self.current, None
        if current is not None:
            self._ready(current)  # no reply is coming: a VAD waiting for one must not wait on
        self.cancel(current)

    def cancel(self, speculation: Speculation | None) -> None:
        if speculation is not None and not self._scope.is_stale(speculation.generation):
            self._scope.cancel()

    def hold(self, item: Any) -> bool:
        """Keep the speculation's output off the wire until its turn is confirmed."""
        current = self.current
        if current is None or not current.owns(item):
            return False
        current.held.append(item)
        if isinstance(item, (AudioOutput, ResponseDone)) or (
                isinstance(item, TranscriptText) and "audio" not in current.request.output_modalities):
            self._ready(current)
        return True

    def pause_words(self, transcript: SpeculativeTranscript) -> None:
        """A pause's words, for the VAD's turn decision to weigh (told before anything answers them)."""
        if self._vad is not None:
            self._vad.report_words(transcript)

    def held_pause(self, transcript: SpeculativeTranscript) -> None:
        """A pause's words in speech held over the answer (conversation/overlap_judge.py): the VAD weighs them,
        and no reply is made for them, so it need not wait for one."""
        self.pause_words(transcript)
        self.heard(transcript)

    def heard(self, transcript: SpeculativeTranscript) -> None:
        """The service is done with a pause's words: say now if no reply to them is in the making.

        The running speculation answers them when it was started for them, or
        when it already answers the same words (then its readiness is theirs).
        """
        current = self.current
        if current is not None and current.item_id == transcript.item_id and (
                current.number == transcript.speculation or (
                    transcript.speculation >= current.awaited
                    and same_words(current.transcript, transcript.transcript))):
            current.awaited = transcript.speculation
            if current.ready:
                self._post(current.item_id, current.awaited)
            return
        self._post(transcript.item_id, transcript.speculation)

    def _ready(self, speculation: Speculation) -> None:
        if not speculation.ready:
            speculation.ready = True
            self._post(speculation.item_id, speculation.awaited)

    def _post(self, item_id: str | None, number: int) -> None:
        if self._vad is not None:
            self._vad.report_reply_ready(ReplyReady(item_id, number))
