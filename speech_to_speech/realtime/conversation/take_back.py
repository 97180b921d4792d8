"""Taking a reply back when the user goes on: the other half of answering at the first pause.

Under ``semantic_vad`` a turn that sounds finished ends after
``--finished_pause_ms`` (200) of silence, as soon as its reply is ready, so the
reply starts ~300 ms after the user stopped. People pause up to ~400 ms
between the sentences of one request ("I have eggs and spinach." … "What
can I cook?"), so the reply sometimes starts on the first sentence. Waiting
every such pause out would make every answer ~250 ms later. Instead, speech
that resumes within ``--take_back_within_ms`` (600) of silence after such a
turn takes its reply back, whether it is still being made or was all sent
(the user has heard its first few hundred ms at most):

- a reply still being made is cancelled as speech over it would cancel it
  (``response.done`` ``cancelled``, reason ``turn_detected``);
- its items are deleted (``conversation.item.deleted``), so the next turn is
  answered with both utterances as the user's, one request in two messages,
  and the client's copy of the conversation matches the model's. A client's
  ``conversation.item.truncate`` of such an item that crossed its deletion
  is accepted and does nothing.

A turn whose words read as a whole sentence but that sounded unfinished
(``disputed``) ends the same way, and is taken back the same way, where this
window is at least the silence window: speech the silence rule would have
waited for then always takes the reply back.

Never taken back: the reply to a turn the detector did not end at its first
pause (the silence rules waited long enough), one that called a tool (the tool
may have acted), one that failed, one another response followed, and any in
a session that turned interruptions off.
"""

from __future__ import annotations

from speech_to_speech.pipeline.messages.input_audio import SpeechStarted
from speech_to_speech.realtime.conversation.response import ResponseState
from speech_to_speech.realtime.conversation.responses import Responses

# The decisions that end a turn at its first pause where a reply can be taken back: it sounded
# finished, or its words read as a whole sentence against the detector (turns.controller).
EARLY_OUTCOMES = frozenset({"finished", "disputed"})


def may_take_back(speech: SpeechStarted, response: ResponseState | None, within_ms: int) -> bool:
    """Whether ``speech`` goes on with the request ``response`` (the active or last one) answered."""
    if within_ms <= 0 or not speech.interrupt_response or speech.after_silence_ms is None:
        return False
    if speech.after_silence_ms > within_ms or response is None or response.turn_item_id is None:
        return False
    decision = response.turn_decision
    return (response.turn_item_id == speech.after_item_id and decision is not None
            and decision.outcome in EARLY_OUTCOMES
            and not any(item.get("type") == "function_call" for item in response.output))


class TakeBack:
    """Applies :func:`may_take_back` to a session's responses as each utterance starts (on the event loop)."""

    def __init__(self, responses: Responses, within_ms: int) -> None:
        self._responses = responses
        self._within_ms = within_ms

    def speech_started(self, speech: SpeechStarted) -> bool:
        """Take back the reply ``speech`` goes on from, before the overlap policy sees it; True if it did."""
        response = self._responses.active or self._responses.last
        if not may_take_back(speech, response, self._within_ms):
            return False
        assert response is not None
        self._responses.take_back(response)  # its listeners (/metrics) are told
        return True
