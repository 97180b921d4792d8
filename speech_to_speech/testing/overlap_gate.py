"""An overlap gate for tests of the judge of speech over the answer: judges every utterance, keeps the decisions."""

from __future__ import annotations

from speech_to_speech.pipeline.messages.input_audio import SpeechStarted
from speech_to_speech.realtime.conversation.overlap import Decision, Overlap


class RecordingGate:
    """What :class:`~speech_to_speech.realtime.conversation.overlap_judge.OverlapJudge` needs of the session's gate."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []

    def judges(self, item: SpeechStarted) -> Overlap | None:
        return Overlap(item.item_id, "resp_1")

    def judged(self, overlap: Overlap, decision: Decision, words: str | None) -> None:
        self.decisions.append(decision)
