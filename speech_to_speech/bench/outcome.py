"""Did a spoken request get an answer, and only one? Pure functions over a turn's event log.

A request is *answered* when a response ended ``completed`` or
``incomplete`` and the client read audio of it: a response that is cancelled,
fails, or completes without a sound leaves the user waiting. It is a *double
answer* when more than one response produced audio for it: the user hears
two replies (or a false start and a reply) to one thing they said. A reply
the server *took back* (the user went on with the request right after the
turn ended: its items deleted by the server, ``conversation.item.deleted``)
is a false start the server owned up to: counted apart, not as a double
answer, and never the answer itself (the request is answered by the reply
that follows). How much of it the user heard is bounded by
:attr:`Response.heard_ms`: its audio read before the deletion.

The bench also has to know when to stop listening: :func:`quiet` says the
turn has run its course (the user's speech closed, every response closed,
and nothing read for a while), so an unanswered request costs a settle
period, not the whole timeout.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from speech_to_speech.bench.events import AUDIO_DELTA, audio_ms, response_id
from speech_to_speech.protocol import TURN_DETECTION_KEY
from speech_to_speech.testing.realtime_client import Received

ANSWERING = ("completed", "incomplete")  # statuses whose audio the user gets to hear out
USER_TRANSCRIPT = "conversation.item.input_audio_transcription.completed"


@dataclass(frozen=True)
class Response:
    """One response as the client saw it; ``status`` is None while it has no ``response.done``."""

    id: str
    status: str | None = None
    status_details: dict[str, Any] | None = None
    audio_ms: float = 0.0
    first_audio_at: float | None = None  # monotonic time its first audio delta was read
    transcript: str = ""
    # What the turn detector decided when it ended the turn this response answers (the timings
    # extension's metadata, decoded): only the response a turn's end opens carries it.
    turn_detection: dict[str, Any] | None = None
    taken_back_at: float | None = None  # monotonic time its deletion was read: the user went on with the request

    @property
    def taken_back(self) -> bool:
        return self.taken_back_at is not None

    @property
    def answered(self) -> bool:
        return self.status in ANSWERING and self.first_audio_at is not None and not self.taken_back

    @property
    def heard_ms(self) -> float | None:
        """Of a taken-back reply, the most of it a client playing as it reads could have played: its audio,
        up to the time between its first delta and its deletion. None for a reply not taken back."""
        if self.taken_back_at is None:
            return None
        if self.first_audio_at is None:
            return 0.0
        return max(0.0, min(self.audio_ms, (self.taken_back_at - self.first_audio_at) * 1000.0))

    @property
    def ending(self) -> str:
        """Its status and why, as ``"cancelled: turn_detected"`` (the status alone when no reason is given)."""
        if self.status is None:
            return "open: no response.done"
        reason = reason_of(self.status_details)
        return f"{self.status}: {reason}" if reason else self.status


def reason_of(details: dict[str, Any] | None) -> str | None:
    """Why a response ended as it did: ``status_details.reason``, or a failure's error message or code."""
    details = details or {}
    error = details.get("error") or {}
    found = details.get("reason") or error.get("message") or error.get("code")
    return str(found) if found else None


def turn_detection_of(response: dict[str, Any]) -> dict[str, Any] | None:
    """The turn detector's decision in a ``response.done``'s metadata: detector, outcome, probability,
    inference_ms, words, continuation. None when it has none; an undecodable one is kept as ``{"raw": ...}``."""
    value = (response.get("metadata") or {}).get(TURN_DETECTION_KEY)
    if value is None:
        return None
    try:
        decoded = json.loads(value)
    except (TypeError, ValueError):
        decoded = None
    return decoded if isinstance(decoded, dict) else {"raw": value}


@dataclass(frozen=True)
class Outcome:
    responses: tuple[Response, ...]  # in order of appearance
    heard: tuple[str, ...]  # the user transcripts, in order (a split turn has several)

    @property
    def answer(self) -> Response | None:
        """The first response that answered, if any."""
        return next((r for r in self.responses if r.answered), None)

    def answer_after(self, end_of_speech: float | None) -> Response | None:
        """The answer the user waited for: the first that answered with audio read after ``end_of_speech``
        (a reply begun on a pause inside the request is a false start); else :attr:`answer`."""
        if end_of_speech is not None:
            found = next((r for r in self.responses if r.answered and (r.first_audio_at or 0.0) >= end_of_speech),
                         None)
            if found is not None:
                return found
        return self.answer

    @property
    def answered(self) -> bool:
        return self.answer is not None

    @property
    def audio_responses(self) -> int:
        return sum(1 for r in self.responses if r.first_audio_at is not None)

    @property
    def taken_back(self) -> int:
        """Replies with audio that the server took back (see the module's docstring)."""
        return sum(1 for r in self.responses if r.first_audio_at is not None and r.taken_back)

    @property
    def double(self) -> bool:
        return self.audio_responses - self.taken_back > 1


def outcome(log: Sequence[Received]) -> Outcome:
    """Every response in ``log`` (by id: created, audio, transcript, done) and what the user was heard say."""
    found: dict[str, dict[str, Any]] = {}
    heard: list[str] = []
    items_of: dict[str, str] = {}  # output item id -> its response id
    deleted: dict[str, float] = {}  # item id -> when its deletion was read
    for entry in log:
        event = entry.event
        kind = event.get("type")
        if kind == "conversation.item.deleted":  # the bench never deletes: the server took a reply back
            deleted.setdefault(str(event.get("item_id")), entry.at)
            continue
        if kind == USER_TRANSCRIPT:
            heard.append(str(event.get("transcript") or ""))
            continue
        rid = response_id(event) if isinstance(kind, str) and kind.startswith("response.") else None
        if rid is None:
            continue
        fields = found.setdefault(str(rid), {"id": str(rid)})
        if kind == AUDIO_DELTA:
            fields["audio_ms"] = fields.get("audio_ms", 0.0) + audio_ms(event)
            fields.setdefault("first_audio_at", entry.at)
        elif kind == "response.output_audio_transcript.done":
            fields["transcript"] = str(event.get("transcript") or "")
        elif kind == "response.done":
            response = event.get("response") or {}
            fields["status"] = str(response.get("status"))
            fields["status_details"] = response.get("status_details")
            fields["turn_detection"] = turn_detection_of(response)
            items_of.update({str(item.get("id")): str(rid) for item in response.get("output") or []})
    for item_id in deleted.keys() & items_of.keys():
        fields = found[items_of[item_id]]
        fields["taken_back_at"] = min(fields.get("taken_back_at", deleted[item_id]), deleted[item_id])
    return Outcome(tuple(Response(**fields) for fields in found.values()), tuple(heard))


def quiet(log: Sequence[Received], since: float, now: float, settle_s: float) -> bool:
    """The turn is over: speech started as often as it stopped, no response is open, and nothing was
    read for ``settle_s`` after ``since`` (when the request's audio had all been sent) or the last event."""
    kinds = [entry.event.get("type") for entry in log]
    if kinds.count("input_audio_buffer.speech_started") > kinds.count("input_audio_buffer.speech_stopped"):
        return False
    created = {response_id(e.event) for e in log if e.event.get("type") == "response.created"}
    done = {response_id(e.event) for e in log if e.event.get("type") == "response.done"}
    if created - done:
        return False
    last = max([since, *(entry.at for entry in log)])
    return now - last >= settle_s
