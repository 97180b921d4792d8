"""No long dead air after the preamble: a short holding phrase while the response still waits.

A preamble ("Let me check that.") tells the user a wait is coming; the wait
itself can still be long: the call being written (a few seconds for the
1.5B on two busy cores), a slow tool, then the model's first words on the
result. A person on the phone fills such a pause now and then ("Still
checking."). So once a response has said something, whenever the user's
speaker has been quiet for ``hold_after_s`` while the response is still
active, the server says a holding phrase in the reply's language, at most
:data:`MAX_HOLDS` per response. It is said only if the model's own words of
the request under way have not started (the output processor decides, in
order with them: ``Preamble.holding``), so it never cuts into the answer;
a response that ends (answered, cancelled, spoken over) says no more.

A function tool is run by the client between two responses: the call's
response ends, and the answer's opens at the client's ``response.create``.
For the user it is one wait, so the answer's response goes on with it
(SessionTools decides): its quiet counts from when the speaker went quiet,
not from its creation, and it says a holding phrase rather than a second
preamble, at once if the client took longer than ``hold_after_s``.

The rule (:func:`step`) is pure, over explicit times; :class:`HoldingTimer`
drives it on the event loop with one timer at a time.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from speech_to_speech.pipeline.messages.generation import Preamble
from speech_to_speech.realtime.conversation.response import ResponseState
from speech_to_speech.realtime.tools.preamble import holding_phrase
from speech_to_speech.units.unit import PipelineUnit

# At most this many holding phrases in one response: with the preamble, three short phrases over ten seconds
# or so is what a person checking something says; more would be chatter, and a tool that never answers ends
# in its timeout, which the model then speaks about.
MAX_HOLDS = 2
# The quiet after speech before a holding phrase, as a multiple of preamble_after_ms (the quiet the user waits
# before the first word, 1 s by default): told a wait is coming, a listener bears a longer one (3 s by
# default, past a quick tool's whole wait: bench tools' time requests answer 2.4-2.8 s after the speech).
HOLD_AFTER_FACTOR = 3
# Never less than this: phrases a moment apart (preamble_after_ms: 0) would sound like a stammer.
MIN_HOLD_AFTER_MS = 1000


def hold_after_s(preamble_after_ms: int) -> float:
    """The quiet (seconds) before a holding phrase, for a session's ``preamble_after_ms``."""
    return max(MIN_HOLD_AFTER_MS, HOLD_AFTER_FACTOR * preamble_after_ms) / 1000.0


@dataclass(frozen=True)
class Wait:
    """One response's wait, as the rule sees it."""

    held: int = 0  # holding phrases asked for so far
    asked_at: float = -math.inf  # when the server last asked for a phrase (its audio may not be out yet)
    over: bool = False  # the response ended: nothing more is said

    def asked(self, at: float) -> Wait:
        """A phrase of the server's (the preamble) was asked for at ``at``: the quiet counts from then at least."""
        return replace(self, asked_at=max(self.asked_at, at))

    def ended(self) -> Wait:
        return replace(self, over=True)


@dataclass(frozen=True)
class Hold:
    """Say the ``index``-th holding phrase of the wait now, then look again at ``wake_at``."""

    index: int
    wake_at: float


@dataclass(frozen=True)
class WakeAt:
    """Nothing to say yet: look again at ``at``."""

    at: float


Decision = Hold | WakeAt | None  # None: nothing more to say in this wait


def step(wait: Wait, now: float, quiet_at: float, after_s: float) -> tuple[Wait, Decision]:
    """What to do at ``now``, the speaker quiet from ``quiet_at`` (when it played the last audio it was sent):
    a holding phrase once the quiet since the last thing said or asked for reaches ``after_s``."""
    if wait.over or wait.held >= MAX_HOLDS:
        return wait, None
    due = max(quiet_at, wait.asked_at) + after_s
    if now < due:
        return wait, WakeAt(due)
    wait = replace(wait, held=wait.held + 1, asked_at=now)
    return wait, Hold(wait.held - 1, now + after_s)


class HoldingTimer:
    """Says holding phrases in the active response's wait, by :func:`step` (runs on the event loop)."""

    def __init__(self, unit: PipelineUnit, active: Callable[[], ResponseState | None],
                 after_ms: Callable[[], int | None], language: Callable[[], str | None],
                 quiet_at: Callable[[], float]) -> None:
        """``after_ms``: the session's ``preamble_after_ms`` (None: no phrases of ours); ``quiet_at``: when the
        user's speaker runs out of audio (conversation/playback.py ``speaker_quiet_at``)."""
        self._unit = unit
        self._active = active
        self._after_ms = after_ms
        self._language = language
        self._quiet_at = quiet_at
        self._response: ResponseState | None = None
        self._wait = Wait()
        self._timer: asyncio.TimerHandle | None = None
        self._waits = 0  # waits watched in the session: the phrases vary from one to the next (the first
        # wait begins with the first phrase, "Still checking.")

    def watch(self, response: ResponseState, *, asked: bool = False, goes_on: bool = False) -> None:
        """``response`` waits for its answer (a call, a tool, the model's words on a result): watched once it
        has said something (``asked``: the server just asked for its preamble), or from the start where it
        ``goes_on`` with a wait the response before it began (the client ran that one's call)."""
        if self._after_ms() is None or not response.audio:
            return
        said = asked or goes_on or "first_audio_sent" in response.marks
        if not said and response is not self._response:
            return  # nothing said yet: the preamble's wait (preamble.py), not this one
        if response is not self._response:
            self.stop()
            self._response, self._wait = response, Wait()
            self._waits += 1
        if asked:
            self._wait = self._wait.asked(time.monotonic())
        if self._timer is None:
            self._schedule(time.monotonic())

    def _schedule(self, at: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # driven step by step with no event loop (testing/stepped.py): no clock to wait on
        self._timer = loop.call_later(max(0.0, at - time.monotonic()), self._wake)

    def _wake(self) -> None:
        self._timer = None
        response, after = self._response, self._after_ms()
        if (response is None or after is None or self._active() is not response
                or self._unit.cancel_scope.is_stale(response.generation)):
            self.stop()  # it ended, was cancelled or spoken over, or the session turned phrases off
            return
        self._wait, decision = step(self._wait, time.monotonic(), self._quiet_at(), hold_after_s(after))
        if isinstance(decision, Hold):
            language = self._language()
            self._unit.say_preamble(Preamble(response.id, response.generation,
                                             holding_phrase(language, self._waits - 1 + decision.index),
                                             holding=True, language=language))
            self._schedule(decision.wake_at)
        elif isinstance(decision, WakeAt):
            self._schedule(decision.at)

    def stop(self) -> None:
        """The watched response ended (or another began): no more phrases for it."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._wait = self._wait.ended()
        self._response = None
