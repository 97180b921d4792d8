"""Double talk: whether the user talks over the echo, from how much each canceller took off a 10 ms frame.

Two cancellers see every frame (:mod:`speech_to_speech.audio.echo`): AEC3,
whose suppressor takes almost everything off echo alone and, in double talk,
a good part of the user too; and a linear one
(:mod:`speech_to_speech.audio.linear_echo`) that only subtracts the echo it
predicts. On echo alone the linear canceller takes a steady amount off the
microphone (what it has learnt: ``erle_db``). When someone talks over the
echo, the microphone holds sound the prediction lacks, and the linear
canceller takes much less off than it does on echo alone: that is double
talk. For ``HOLD_FRAMES`` after its last such frame the user is heard
through the linear canceller (their words whole, the echo ``erle_db``
down), and so it is for ``SETTLE_FRAMES`` after the speaker stops (a reply
cut off because the user talks); otherwise through AEC3 (nothing of the echo
that the VAD could take for the user). The linear canceller learns only from frames of echo alone
heard while not holding, so the user's voice does not pull it off the echo
path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ACTIVE_DB = -55.0  # the reference is sounding above this: the assistant is speaking
CANCELLED_DB = 15.0  # AEC3 took at least this off: the microphone held echo alone
MIN_ERLE_DB = 12.0  # the linear canceller is trusted once it takes this much off echo alone (a second in: 12-16)
MIN_LEARNT_FRAMES = 50  # measured on this many frames of echo alone (a few frames of an answer's start flatter it)
TALK_GAP_DB = 8.0  # the linear canceller took this much less than it does on echo alone: someone talks
DOUBT_DB = 4.0  # a frame it took this much less off than usual (and under TALK_MAX_TOOK_DB + this) is not measured
TALK_MAX_TOOK_DB = 10.0  # and less than this: a talker as loud as the echo leaves 3 dB, 6 dB under it 7 dB
ADDED_DB = 3.0  # the linear canceller's output louder than the microphone by this: it adds echo (a moved path)
LOST_FRAMES = 5  # in this many frames in a row
TALK_FRAMES = 5  # in this many frames in a row (one alone is the filter missing a sound it has not learnt)
# Before ``MIN_LEARNT_FRAMES``, a run this long once this many are learnt: an answer's first pause can hold the
# measure under 50 frames past 1.5 s, and a "Wait." said then was lost whole. (Offline, echo alone, 24 rooms:
# runs up to 18 frames long with under 20 learnt, up to 6 with 30-49.)
EARLY_TALK_FRAMES = 10
EARLY_LEARNT_FRAMES = 30
TALKER_DB = -45.0  # left after the linear canceller, a frame quieter than this is not a talker to hear
TALKER_UNDER_ECHO_DB = 10.0  # and no more than this under the echo's level (a talker 6 dB under it is well within)
SETTLE_FRAMES = 30  # 300 ms after the speaker stopped: the echo of what it played last, placed only roughly
HOLD_FRAMES = 40  # 400 ms: the pauses between a talker's words stay with the linear canceller
LEARN = 0.05  # how fast ``erle_db`` follows the echo-alone frames


@dataclass(frozen=True)
class FrameLevels:
    """One frame's levels, dBFS: the reference sounding now, the microphone, and each canceller's output."""

    reference_db: float
    microphone_db: float
    aec_db: float  # AEC3's output (after the residual suppressor)
    linear_db: float  # the linear canceller's output
    linear_ready: bool  # the linear canceller has found the echo's delay


@dataclass(frozen=True)
class Verdict:
    linear: bool  # hear this frame through the linear canceller
    adapt: bool  # the linear canceller may learn from this frame (echo alone)
    talk: bool  # this frame is double talk
    lost: bool  # the linear canceller adds echo (the path moved): it must learn anew


class DoubleTalk:
    """One microphone's double-talk state, fed every frame in order."""

    def __init__(self) -> None:
        self._echo_power = 0.0  # the microphone's recent power on frames of echo alone
        self._left_power = 0.0  # and the linear canceller's output's on them
        self.hold = 0  # frames still heard through the linear canceller
        self.unexplained = 0  # frames in a row the echo path did not explain
        self.adding = 0  # frames in a row the linear canceller added to the microphone
        self.learnt = 0  # frames of echo alone the linear canceller learnt from since it began anew
        self.settling = 0  # frames still to pass since the speaker stopped

    def stopped(self) -> None:
        """The speaker stopped playing (a reply cut off). The client stops a little before or after where the
        reference ends, so for ``SETTLE_FRAMES`` the echo's tail does not match it: the linear canceller neither
        learns from those frames nor is judged lost by them (it would forget a path learnt well).

        A reply is cut off because the user talks: for those frames they are heard through a linear canceller
        that has learnt the path, which takes the tail it predicts off and nothing else. Through AEC3, the end of
        a word said under the tail was taken off with it, and the pause it made ended the turn at a comma."""
        self.settling = SETTLE_FRAMES
        self.adding = 0
        if self.trusted:
            self.hold = max(self.hold, SETTLE_FRAMES + 1)  # (each frame counts it down before it is heard)

    def forget(self) -> None:
        """The linear canceller starts learning anew: no talker is judged by it, nor heard through it, until then."""
        self._echo_power = self._left_power = 0.0
        self.hold = self.unexplained = self.adding = self.learnt = 0

    @property
    def _talker_floor_db(self) -> float:
        """What is left after the linear canceller is a talker only above this: ``TALKER_DB``, and within
        ``TALKER_UNDER_ECHO_DB`` of the echo's level (a soft stretch of the answer that the filter explains less
        well than its loud ones leaves its residue well under that)."""
        if self._echo_power <= 0.0:
            return TALKER_DB
        return max(TALKER_DB, float(10 * np.log10(self._echo_power)) - TALKER_UNDER_ECHO_DB)

    @property
    def erle_db(self) -> float | None:
        """What the linear canceller takes off echo alone (its echo return loss enhancement), once learnt."""
        if self._echo_power <= 0.0:
            return None
        return float(10 * np.log10(self._echo_power / max(self._left_power, 1e-15)))

    @property
    def explains_echo(self) -> bool:
        """The linear canceller takes ``MIN_ERLE_DB`` off echo alone: it has the path."""
        erle_db = self.erle_db
        return erle_db is not None and erle_db >= MIN_ERLE_DB

    @property
    def trusted(self) -> bool:
        """And that was measured on enough frames to judge a talker by it."""
        return self.explains_echo and self.learnt >= MIN_LEARNT_FRAMES

    @property
    def _talk_frames(self) -> int | None:
        """The run of unexplained frames that is a talker, as far as the measure is trusted (None: not yet)."""
        if self.trusted:
            return TALK_FRAMES
        if self.explains_echo and self.learnt >= EARLY_LEARNT_FRAMES:
            return EARLY_TALK_FRAMES
        return None

    def update(self, levels: FrameLevels) -> Verdict:
        active = levels.reference_db >= ACTIVE_DB
        aec_took = levels.microphone_db - levels.aec_db
        linear_took = levels.microphone_db - levels.linear_db
        settling = self.settling > 0
        self.settling -= settling
        talker_floor_db = self._talker_floor_db
        # more left after the linear canceller than came in: it adds echo. Not in a pause of the echo, where
        # what it predicts of the tail outweighs a microphone near silence but lies far under the echo's level.
        self.adding = self.adding + 1 if (levels.linear_ready and linear_took < -ADDED_DB
                                          and levels.linear_db >= talker_floor_db and not settling) else 0
        lost = self.adding >= LOST_FRAMES
        if lost:
            self.forget()
        erle_db = self.erle_db
        unexplained = (levels.linear_ready and erle_db is not None and levels.linear_db >= talker_floor_db
                       and linear_took < min(erle_db - TALK_GAP_DB, TALK_MAX_TOOK_DB))
        self.unexplained = self.unexplained + 1 if unexplained else 0
        talk_frames = self._talk_frames
        talk = active and talk_frames is not None and self.unexplained >= talk_frames
        if talk:
            self.hold = HOLD_FRAMES
        elif self.hold:
            self.hold -= 1
        # AEC3 also takes a talker over the echo off; learning from them would take the filter off the echo path
        adapt = (active and levels.linear_ready and aec_took >= CANCELLED_DB and not unexplained and not lost
                 and not settling)
        # the measure, though, leaves out frames it already doubts: a talker's first syllable, still quiet under
        # the echo, would pull it down and the talker would not be told apart
        doubtful = erle_db is not None and linear_took < min(erle_db - DOUBT_DB, TALK_MAX_TOOK_DB + DOUBT_DB)
        if adapt and not doubtful:  # power, not dB, averaged: the loud frames count most
            self._echo_power += LEARN * (10 ** (levels.microphone_db / 10) - self._echo_power)
            self._left_power += LEARN * (10 ** (levels.linear_db / 10) - self._left_power)
        self.learnt += adapt
        # a path being checked against a restarted echo is not heard through, even holding: it may be off it, and
        # the reply's echo came through it as the user (live: taken back by its own echo)
        return Verdict(linear=bool(self.hold) and levels.linear_ready, adapt=adapt, talk=talk, lost=lost)
