"""The overlap policy: what the user's speech over the assistant's does (docs/sessions.md, "Overlap policy").

Users talk over a speaking assistant for two different reasons: to take the
turn ("stop, that's not what I asked"), or to show they are listening
("mm-hmm", "yeah"). Cancelling on the first voiced chunk, as OpenAI's server
does, treats both alike. A session picks its policy with ``overlap_policy``:

- ``adaptive`` (the default): speech over the answer is judged by its words
  before it becomes a turn (conversation/overlap_judge.py): a listener's remark
  ("yeah", "mm-hm", a laugh) is acknowledged and the answer plays on; anything
  else cancels it the moment its words are heard.
- ``barge_in_on_speech``: speech cancels the response as soon as the VAD hears
  it, exactly as before these policies existed.
- ``listen_only``: the response goes on while the user speaks over it, and the
  utterance is judged by how long it was voiced, on the VAD's audio clock:
  ``overlap_barge_in_ms`` or more cancels the response (the VAD says so the
  moment the span reaches it, ``SpeechOngoing``); an utterance that ends
  shorter than ``overlap_short_ack_ms`` is a backchannel, which is kept in the
  conversation and never answered; anything between is deferred: it becomes
  the user's next turn, answered when the response ends. Speech before the
  response has said anything is no overlap but the user going on with the
  turn: it cancels the response under either policy.

``turn_detection.interrupt_response: false`` still means no barge-in at all,
under either policy. Each decision is reported as ``overlap.decision`` to a
client that set ``overlap_policy`` itself (either value): stock clients that
never heard of the policy get exactly the events they got before, which
matters because some (openai-agents) report an unknown event type as an error.

:func:`decide` and :class:`Overlap` are pure (no I/O, no clock), so their rules
are tested exhaustively; :class:`OverlapGate` applies them to a session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from speech_to_speech.pipeline.messages.input_audio import SpeechOngoing, SpeechStarted, SpeechStopped
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.protocol.overlap_decisions import (
    ACKNOWLEDGE,
    BARGE_IN,
    DEFER,
    IGNORE,
    INTERRUPT_DISABLED,
    LONG_OVERLAP,
    NOTHING_SAID_YET,
    OVERLAP_DEFERRED,
    SHORT_BACKCHANNEL,
    SPEECH_STARTED,
    OverlapAction,
    OverlapReason,
)
from speech_to_speech.protocol.policies import ADAPTIVE, BARGE_IN_ON_SPEECH, LISTEN_ONLY
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.playback import OverlapMetadata, overlap_decision
from speech_to_speech.realtime.wire.session import OVERLAP_DEFAULTS


@dataclass(frozen=True)
class Thresholds:
    """A listen_only session's thresholds (ms of voiced audio) and whether it may interrupt at all."""

    short_ack_ms: int
    barge_in_ms: int
    interrupt: bool = True


@dataclass(frozen=True)
class Decision:
    action: OverlapAction
    reason: OverlapReason
    overlap_ms: int


def decide(overlap_ms: int, thresholds: Thresholds, *, ended: bool) -> Decision | None:
    """listen_only's rule for an utterance voiced for ``overlap_ms`` so far (``ended``: and no more).

    Cancelling depends on the barge-in threshold alone, so an utterance
    shorter than it never cancels, whatever the short-ack threshold is; one
    that reaches it is decided at once, without waiting for its end. None:
    not decided yet (it goes on, shorter than the barge-in threshold).
    """
    if overlap_ms >= thresholds.barge_in_ms:
        if thresholds.interrupt:
            return Decision(BARGE_IN, LONG_OVERLAP, overlap_ms)
        return Decision(DEFER, INTERRUPT_DISABLED, overlap_ms)
    if not ended:
        return None
    if overlap_ms < thresholds.short_ack_ms:
        return Decision(ACKNOWLEDGE, SHORT_BACKCHANNEL, overlap_ms)
    return Decision(DEFER, OVERLAP_DEFERRED, overlap_ms)


class Overlap:
    """One utterance that began while the assistant spoke (listen_only): decided exactly once.

    :meth:`ongoing` (the VAD's marks) and :meth:`end` each return the decision
    when they are the ones that make it, and None otherwise; :attr:`decision`
    keeps it.
    """

    def __init__(self, item_id: str | None, response_id: str | None) -> None:
        self.item_id = item_id
        self.response_id = response_id  # the response it overlapped (None: only its audio still played)
        self.decision: Decision | None = None

    def ongoing(self, speech_ms: int, thresholds: Thresholds) -> Decision | None:
        if self.decision is not None:
            return None
        self.decision = decide(speech_ms, thresholds, ended=False)
        return self.decision

    def end(self, speech_ms: int | None, thresholds: Thresholds) -> Decision | None:
        """The utterance ended; ``speech_ms`` None: its length is unknown, so it is kept and answered."""
        if self.decision is not None:
            return None
        if speech_ms is None:
            self.decision = Decision(DEFER, OVERLAP_DEFERRED, 0)
        else:
            self.decision = decide(speech_ms, thresholds, ended=True)
        return self.decision


def thresholds_of(session: dict[str, Any], config: RuntimeConfig) -> Thresholds:
    return Thresholds(int(session.get("overlap_short_ack_ms", OVERLAP_DEFAULTS["overlap_short_ack_ms"])),
                      int(session.get("overlap_barge_in_ms", OVERLAP_DEFAULTS["overlap_barge_in_ms"])),
                      config.interrupt_response_enabled)


# ---------------------------------------------------------------- the session side


class _SessionState(Protocol):
    @property
    def session(self) -> dict[str, Any]: ...  # the session object (its overlap fields, its id)

    @property
    def reports_overlap(self) -> bool: ...  # the client set overlap_policy: it is told the decisions

    @property
    def config(self) -> RuntimeConfig: ...  # the runtime config derived from the session object


class _Responses(Protocol):
    """What the gate needs of the session's responses (realtime/conversation/responses.py)."""

    @property
    def active(self) -> Any: ...  # the active ResponseState, or None

    @property
    def playing_for_s(self) -> float: ...  # how long the user's speaker goes on playing it

    def answer(self, turn_item_id: str) -> None: ...  # the turn's automatic response, if the turn is still there

    def cancel(self, reason: str, *, requested: bool = False) -> None: ...

    def clear_playback(self, *, requested: bool = False) -> None: ...


# Speech the VAD reports with no more than this left of the answer to play is the user taking the turn as
# it ends (they began ~250 ms before the report, as people do at a turn's end), not a remark over it.
ANSWER_END_S = 0.3


@dataclass
class _Deferral:
    item_id: str
    response_id: str  # answered when this response ends by itself
    due: bool = False  # it ended while the user was speaking over it again


class OverlapGate:
    """Applies the session's overlap policy to the VAD's speech events (runs on the event loop).

    The turn translator (service/turn_events.py) calls :meth:`speech_started`,
    :meth:`speech_ongoing` and :meth:`speech_stopped` as those items arrive,
    then :meth:`settle` once it has committed the turn; the response translator
    (service/response_events.py) calls :meth:`response_ended` when a response ends by
    itself (not cancelled). What it decides, it asks of the session's
    responses (conversation/responses.py), given to it at construction.
    """

    def __init__(self, responses: _Responses, state: _SessionState, *,
                 emit: Callable[[ServerEvent], None], going_on_ms: int = 0) -> None:
        self._responses = responses
        self._state = state
        self._emit = emit
        self._open: Overlap | None = None  # the listen_only utterance being judged
        self._deferred: _Deferral | None = None
        self._took_turn: str | None = None  # adaptive: the utterance whose words barged in (already reported)
        # adaptive: speech this soon after the user's own turn is them going on with it (take-back), not a remark.
        self._going_on_ms = going_on_ms

    # ------------------------------------------------------------ VAD events

    def judges(self, item: SpeechStarted) -> Overlap | None:
        """adaptive: this speech is over the assistant's answer and may interrupt it, so its words must be
        judged before it becomes a turn (the utterance to judge); None: it is handled as it comes."""
        response = self._responses.active
        speaking = self._speaking(response, self._playing_on())
        interrupt = item.interrupt_response and self._state.config.interrupt_response_enabled
        going_on = item.after_silence_ms is not None and item.after_silence_ms <= self._going_on_ms
        if self._policy() != ADAPTIVE or not speaking or not interrupt or going_on:
            return None
        return Overlap(item.item_id, response.id if response is not None else None)

    def judged(self, overlap: Overlap, decision: Decision, words: str | None) -> None:
        """adaptive: the words of ``overlap`` decided (reported now); a barge-in cancels the answer when the
        utterance's held speech_started goes through :meth:`speech_started`."""
        overlap.decision = decision
        self._report(ADAPTIVE, decision, overlap.item_id, overlap.response_id, words=words)
        if decision.action == BARGE_IN:
            self._took_turn = overlap.item_id

    def speech_started(self, item: SpeechStarted) -> None:
        response = self._responses.active
        playing = self._playing_on()
        overlapping = response is not None or playing
        speaking = self._speaking(response, playing)
        policy = self._policy()
        listen_only = policy == LISTEN_ONLY
        self._open = None
        interrupt = item.interrupt_response and self._state.config.interrupt_response_enabled
        if listen_only and overlapping and (speaking or not interrupt):
            self._open = Overlap(item.item_id, response.id if response is not None else None)
            return
        if item.item_id is not None and item.item_id == self._took_turn:
            self._took_turn = None  # adaptive: its words barged in, and that was reported
        elif overlapping:
            # adaptive over a speaking answer, unjudged: the user going on with their own turn (take-back).
            reason = SPEECH_STARTED if policy == BARGE_IN_ON_SPEECH or (policy == ADAPTIVE and speaking) else (
                NOTHING_SAID_YET)
            decision = Decision(BARGE_IN, reason, item.speech_ms) if interrupt else (
                Decision(IGNORE, INTERRUPT_DISABLED, item.speech_ms))
            self._report(policy, decision, item.item_id, response.id if response is not None else None)
        # Today's rule, unchanged: cancel the response; a finished one may still play on the media track.
        if response is not None and interrupt:
            self._responses.cancel("turn_detected")
        elif interrupt:
            self._responses.clear_playback()

    def speech_ongoing(self, item: SpeechOngoing) -> None:
        overlap = self._open
        if overlap is None or overlap.item_id != item.item_id:
            return
        decision = overlap.ongoing(item.speech_ms, self._thresholds())
        if decision is not None:
            self._act(overlap, decision)

    def speech_stopped(self, item: SpeechStopped) -> bool:
        """Whether the turn that ended may get an automatic response now (False: a backchannel, or deferred)."""
        overlap, self._open = self._open, None
        if overlap is None or overlap.item_id != item.item_id:
            return True
        decision = overlap.end(item.speech_ms, self._thresholds())
        if decision is not None:
            self._act(overlap, decision)
        decision = overlap.decision
        assert decision is not None
        if decision.action == ACKNOWLEDGE:
            return False
        response = self._responses.active
        if decision.action == DEFER and response is not None and item.item_id is not None:
            self._deferred = _Deferral(item.item_id, response.id)
            return False
        self._deferred = None  # this turn is answered now, with the deferred one in its history
        return True

    def listening(self, item_id: str | None) -> bool:
        """The utterance is being judged: nothing may answer it yet (speculation waits)."""
        return self._open is not None and self._open.item_id == item_id and self._open.decision is None

    # ------------------------------------------------------------ responses

    def response_ended(self, response_id: str) -> None:
        """``response_id`` ended by itself: the turn deferred behind it is answered (once the user is done)."""
        deferred = self._deferred
        if deferred is None or deferred.response_id != response_id:
            return
        deferred.due = True
        if self._open is None:
            self.settle()

    def settle(self) -> None:
        """Answer the deferred turn if its response has ended and nothing else is answering or being said."""
        deferred = self._deferred
        if deferred is None or not deferred.due or self._open is not None or self._responses.active is not None:
            return
        self._deferred = None
        td = self._state.config.turn_detection
        if td is not None and td.create_response:
            self._responses.answer(deferred.item_id)

    # ------------------------------------------------------------ decisions

    @staticmethod
    def _speaking(response: Any, playing: bool) -> bool:
        """The assistant is speaking: its answer plays on, or the active response has begun its answer. Speech
        over an answer that has not said a word yet is the user going on with their turn."""
        return playing or (response is not None and response.message is not None)

    def _playing_on(self) -> bool:
        """The answer's audio plays on past its last moments (a finished response's too)."""
        return self._responses.playing_for_s > ANSWER_END_S

    def _policy(self) -> str:
        return str(self._state.session.get("overlap_policy", OVERLAP_DEFAULTS["overlap_policy"]))

    def _thresholds(self) -> Thresholds:
        return thresholds_of(self._state.session, self._state.config)

    def _act(self, overlap: Overlap, decision: Decision) -> None:
        response = self._responses.active
        self._report(LISTEN_ONLY, decision, overlap.item_id, overlap.response_id)
        if decision.action != BARGE_IN:
            return
        self._deferred = None  # the barging turn is answered next, with the deferred one in its history
        if response is not None:
            self._responses.cancel("turn_detected")
        else:
            self._responses.clear_playback()

    def _report(self, policy: str, decision: Decision, item_id: str | None, response_id: str | None, *,
                words: str | None = None) -> None:
        if not self._state.reports_overlap:
            return
        session = self._state.session
        short_ack, barge_in = (session.get(k, OVERLAP_DEFAULTS[k]) for k in ("overlap_short_ack_ms",
                                                                             "overlap_barge_in_ms"))
        metadata: OverlapMetadata = {"overlap_ms": decision.overlap_ms, "item_id": item_id, "response_id": response_id,
                                     "short_ack_ms": short_ack, "barge_in_ms": barge_in}
        if words is not None:
            metadata["transcript"] = words  # adaptive: the words that decided
        self._emit(overlap_decision(session.get("id"), policy, decision.action, decision.reason, metadata))
