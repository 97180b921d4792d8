"""What ``overlap.decision`` may say (docs/sessions.md): the closed sets of its actions and reasons.

The overlap rules (realtime/conversation/overlap.py and the words rule in
turns/listener_words.py) decide in these terms and the wire reports them as
they are, so they are typed once here, beside the policies that choose a rule.
"""

from __future__ import annotations

from typing import Literal, get_args

OverlapAction = Literal["barge_in", "acknowledge", "defer", "ignore"]
OverlapReason = Literal["speech_started", "long_overlap_speech", "short_backchannel", "overlap_deferred",
                        "interrupt_disabled", "response_not_started", "interruption", "backchannel"]

BARGE_IN: OverlapAction = "barge_in"  # the response is cancelled (and its unplayed audio dropped)
ACKNOWLEDGE: OverlapAction = "acknowledge"  # the response goes on; the utterance is not answered
DEFER: OverlapAction = "defer"  # the response goes on; the utterance is answered once it ends by itself
IGNORE: OverlapAction = "ignore"  # barge_in_on_speech without interruptions: the response goes on, turns as before

SPEECH_STARTED: OverlapReason = "speech_started"  # barge_in_on_speech: the VAD heard speech
LONG_OVERLAP: OverlapReason = "long_overlap_speech"  # voiced for overlap_barge_in_ms or more, whatever its words
SHORT_BACKCHANNEL: OverlapReason = "short_backchannel"  # listen_only: ended before overlap_short_ack_ms
OVERLAP_DEFERRED: OverlapReason = "overlap_deferred"  # listen_only: ended between the two thresholds
INTERRUPT_DISABLED: OverlapReason = "interrupt_disabled"  # turn_detection.interrupt_response is false
# The response had said nothing yet, so the user is still taking their turn ("… in French").
NOTHING_SAID_YET: OverlapReason = "response_not_started"
INTERRUPTION: OverlapReason = "interruption"  # adaptive: its words are not a listener's
BACKCHANNEL: OverlapReason = "backchannel"  # adaptive: listener words, or a sound without words

ACTIONS: tuple[str, ...] = get_args(OverlapAction)
REASONS: tuple[str, ...] = get_args(OverlapReason)
