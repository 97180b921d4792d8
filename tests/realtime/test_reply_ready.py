"""When the service tells the VAD that a pause's reply is ready (``ReplyReady``), or that none is coming.

The speculation slot announces it once per speculation: at its first held
audio, at its end without audio, when it is dropped, and at once for words no
speculation answers, so a VAD that waits for it never waits for nothing.
"""

from __future__ import annotations

import numpy as np

from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.messages.generation import ChatMessage, GenerateResponseRequest, ResponseDone
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TranscriptText
from speech_to_speech.pipeline.messages.transcription import SpeculativeTranscript
from speech_to_speech.pipeline.messages.turn_taking import ReplyReady
from speech_to_speech.realtime.conversation.speculation import Speculation, SpeculationSlot

WORDS = "What is the capital of Australia?"


class Slot:
    def __init__(self) -> None:
        self.told: list[ReplyReady] = []
        self.slot = SpeculationSlot(CancelScope(), vad=self)

    def report_words(self, words: SpeculativeTranscript) -> None:
        pass  # the words of a pause: what this test watches is the readiness that follows them

    def report_reply_ready(self, ready: ReplyReady) -> None:
        self.told.append(ready)

    def speculate(self, number: int = 1, words: str = WORDS, modalities: tuple[str, ...] = ("audio",)) -> Speculation:
        request = GenerateResponseRequest(f"resp_{number}", 0, (ChatMessage("user", words),),
                                          output_modalities=modalities)
        speculation = Speculation("item_1", number, request)
        self.slot.start(speculation)
        self.slot.heard(SpeculativeTranscript("item_1", words, number))
        return speculation


def audio(response_id: str) -> AudioOutput:
    return AudioOutput(response_id, 0, np.zeros(240, np.int16), 24000)


def test_the_reply_is_ready_at_its_first_held_audio_and_said_once() -> None:
    slot = Slot()
    slot.speculate()
    slot.slot.hold(TranscriptText("resp_1", 0, "Canberra."))
    assert slot.told == []  # text alone does not play in an audio session
    slot.slot.hold(audio("resp_1"))
    slot.slot.hold(audio("resp_1"))
    slot.slot.hold(ResponseDone("resp_1", 0))
    assert slot.told == [ReplyReady("item_1", 1)]


def test_a_reply_without_audio_is_ready_when_it_ends_or_at_its_first_text() -> None:
    slot = Slot()
    slot.speculate()
    slot.slot.hold(ResponseDone("resp_1", 0))  # a tool call, or nothing to say
    assert slot.told == [ReplyReady("item_1", 1)]
    text = Slot()
    text.speculate(modalities=("text",))
    text.slot.hold(TranscriptText("resp_1", 0, "Canberra."))
    assert text.told == [ReplyReady("item_1", 1)]


def test_words_no_speculation_answers_are_announced_at_once() -> None:
    slot = Slot()
    slot.slot.heard(SpeculativeTranscript("item_1", "", 1))
    assert slot.told == [ReplyReady("item_1", 1)]


def test_a_dropped_speculation_says_no_reply_is_coming_and_nothing_after() -> None:
    slot = Slot()
    slot.speculate()
    slot.slot.drop()
    assert slot.told == [ReplyReady("item_1", 1)]
    slot.slot.hold(audio("resp_1"))  # late output of the dropped request
    assert slot.told == [ReplyReady("item_1", 1)]


def test_the_same_words_at_a_later_pause_are_answered_by_the_running_speculation() -> None:
    slot = Slot()
    slot.speculate(number=1)
    slot.slot.heard(SpeculativeTranscript("item_1", WORDS, 2))  # the service kept the running one
    slot.slot.hold(audio("resp_1"))
    assert slot.told == [ReplyReady("item_1", 2)]
    slot.slot.heard(SpeculativeTranscript("item_1", WORDS, 3))  # already ready: said at once
    assert slot.told == [ReplyReady("item_1", 2), ReplyReady("item_1", 3)]

