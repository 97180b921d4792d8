"""How a session listens, read from its live config at every item the VAD takes (a session.update may change it).

The session's ``turn_detection`` overrides the server's vad and turns sections
where it says something (threshold, silence_duration_ms, prefix_padding_ms,
eagerness); what it leaves unsaid comes from the sections.
"""

from __future__ import annotations

from dataclasses import dataclass

from speech_to_speech.config import TurnSettings, VADSettings
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.turns.controller import TurnRules
from speech_to_speech.turns.rules import eagerness


@dataclass(frozen=True)
class Listening:
    """What the VAD's turn host works with for one item."""

    threshold: float  # the speech probability at which speech begins
    pad_ms: int  # audio kept before speech, and after its last word
    min_speech_ms: int  # the voice speech needs to be a turn
    max_speech_ms: int  # the longest turn, silences included
    rules: TurnRules  # what the turn controller judges a pause by
    speculate_after_ms: int  # the pause at which a speculative utterance is cut (0: never)
    interim_every_ms: int  # voice between two interim passes (0: none)
    ongoing_ms: int | None  # the voiced span at which SpeechOngoing goes out (None: never)
    interrupt: bool  # a turn that starts interrupts the response (SpeechStarted says so)


def listening(config: RuntimeConfig, vad: VADSettings, turns: TurnSettings, *, has_detector: bool) -> Listening:
    """How the session of ``config`` listens, over the server's ``vad`` and ``turns`` sections; ``has_detector``:
    the unit has a turn detector (it judges the session's pauses under semantic_vad)."""
    td = config.turn_detection
    judges = has_detector and td is not None and td.type == "semantic_vad"
    silence_ms = td.silence_duration_ms if td is not None and td.silence_duration_ms is not None \
        else int(vad.min_silence_ms)
    # Speech after a turn's end takes its reply back only where speech may interrupt a response.
    take_back_ms = turns.take_back_within_ms if td is None or td.interrupt_response else 0
    rules = TurnRules(judges=judges, silence_ms=silence_ms, turn_pause_ms=turns.pause_ms,
                      finished_pause_ms=turns.finished_pause_ms, max_turn_silence_ms=turns.max_turn_silence_ms,
                      level=eagerness(td), take_back_ms=take_back_ms)
    # A speculation answers the words of a pause ahead of the turn's end: of no use where no response follows.
    speculates = td is not None and td.create_response
    return Listening(
        threshold=td.threshold if td is not None and td.threshold is not None else vad.thresh,
        pad_ms=td.prefix_padding_ms if td is not None and td.prefix_padding_ms is not None else int(vad.speech_pad_ms),
        min_speech_ms=vad.min_speech_ms, max_speech_ms=vad.max_speech_ms, rules=rules,
        speculate_after_ms=turns.speculation_silence_ms if speculates else 0,
        interim_every_ms=turns.interim_transcript_ms, ongoing_ms=config.overlap_barge_in_ms,
        interrupt=config.interrupt_response_enabled)
