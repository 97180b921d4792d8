"""No echo to cancel: a microphone that does not hear the speaker (headphones, a headset) is heard as it is.

AEC3 (:mod:`speech_to_speech.audio.echo`) suppresses by the reference's level
until it has learnt that there is no echo path. Offline, a user talking over
a session's first answer with no echo at all came out of it 30-40 dB down
for the answer's first 3.5-4 s: "Stop, stop." said 2.5 s in was never heard,
and neither was a barge-in in 3 of 5 live trials (``bench echo`` without
echo). The linear canceller cannot help: it has no path to learn.

The speaker adds nothing to what such a microphone hears. So while the
assistant speaks, the microphone's quieter frames (``QUIET_PERCENTILE``) stay
at its noise floor, measured while the assistant is silent; with an echo
they hold the echo's voice and its room tail, well above it. Where that
holds over ``MIN_SPEAKING_FRAMES`` of the assistant speaking (each at least
``SETTLED_FRAMES`` into a stretch of it), the microphone is heard as it is.
An echo path found that the linear canceller explains, or the quieter frames
rising above the floor (in 100 ms steps), ends that. (The delay finder alone
is not enough: a user whose voice is like the assistant's gave it a path,
offline.) A user who talks from the answer's first moments on keeps the
quieter frames above the floor, and is left to AEC3 (``bench echo``'s
barge-in 300 ms into the first answer: 1 of 5 heard, as before).

Offline, the room's echo at 0.3-0.001 of the answer's amplitude over a -66
dBFS floor: never at 0.3; at 0.03 (the echo's voice about 13 dB over the
floor) for 0.4 s of a 7.5 s answer, in its pauses; from 0.01 down, most of
it. An echo that faint lies far under a user's level: the user gate
(:mod:`speech_to_speech.vad.user_gate`) starts a turn on speech that much
quieter than the user only if it sounds like them.
"""

from __future__ import annotations

from collections import deque

import numpy as np

SPEAKING_DB = -45.0  # the reference's level over the room's tail at or above this: the assistant is speaking
SILENT_DB = -60.0  # and at or below this: silent (the floor is measured then)
SPEAKING_FRAMES = 200  # the frames of the assistant speaking that are weighed (2 s)
MIN_SPEAKING_FRAMES = 50  # at least this many before the microphone is heard as it is (500 ms)
# A frame counts once the assistant has spoken this long without a break: an echo comes up to 500 ms after its
# reference (a client's buffer), and frames before it arrives would pass for a microphone that hears none.
SETTLED_FRAMES = 50
# The reference silent longer than this (150 ms) is a stall, not a pause between words: the server had nothing
# more to play yet (a slow machine, the next clause still being written). The echo dies out in it while the
# reference's tail still counts as sounding; those frames, at the floor, passed for a microphone that hears no
# echo, and the answer's echo after the stall came through whole (live, on a 2-core EPYC without AVX-512).
STALL_FRAMES = 15
FLOOR_FRAMES = 500  # the frames of silence the floor is measured on (5 s)
MIN_FLOOR_FRAMES = 30  # at least this many (300 ms: a session's request comes with as much around it)
FLOOR_PERCENTILE = 10  # the floor: the quieter frames of silence (a user talking in the rest)
QUIET_PERCENTILE = 30  # the microphone's quieter frames while the assistant speaks (a user talking in the rest)
ABOVE_FLOOR_DB = 1.5  # those within this of the floor: the speaker adds nothing the microphone hears (see below)
DECIDE_EVERY = 10  # frames between decisions (100 ms)


class NoEcho:
    """One microphone's: fed every 10 ms frame in order, whether it hears no echo at all."""

    def __init__(self) -> None:
        self._speaking: deque[float] = deque(maxlen=SPEAKING_FRAMES)  # the microphone's levels, dBFS
        self._silent: deque[float] = deque(maxlen=FLOOR_FRAMES)
        self._frames = 0
        self._run = 0  # frames the assistant has been speaking without a break
        self._stalled = 0  # frames since the reference itself last sounded
        self.none = False  # no echo: the microphone is heard as it is

    def update(self, reference_db: float, sounding_db: float, microphone_db: float, *, echo_found: bool) -> bool:
        """One frame: the reference's level in it and over the room's tail, the microphone's, and whether an echo
        path was found. Whether the microphone hears no echo."""
        if echo_found:
            self._speaking.clear()
            self.none = False
            return False
        self._stalled = 0 if reference_db >= SPEAKING_DB else self._stalled + 1
        speaking = sounding_db >= SPEAKING_DB and self._stalled <= STALL_FRAMES
        self._run = self._run + 1 if speaking else 0
        if self._run > SETTLED_FRAMES:
            self._speaking.append(microphone_db)
        elif sounding_db <= SILENT_DB:
            self._silent.append(microphone_db)
        self._frames += 1
        if self._frames % DECIDE_EVERY == 0:
            self.none = self._decide()
        return self.none

    def _decide(self) -> bool:
        if len(self._speaking) < MIN_SPEAKING_FRAMES or len(self._silent) < MIN_FLOOR_FRAMES:
            return False
        floor = float(np.percentile(self._silent, FLOOR_PERCENTILE))
        return float(np.percentile(self._speaking, QUIET_PERCENTILE)) <= floor + ABOVE_FLOOR_DB
