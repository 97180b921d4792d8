"""The adaptive overlap policy: speech over the assistant's answer is held until its words decide.

A listener says "yeah", "mm-hm" or "I see" while the assistant talks, laughs,
or coughs; a stock client stops its playback on the first
``input_audio_buffer.speech_started``, so that event must not go out for them.
While the assistant is speaking, :class:`OverlapJudge` keeps every pipeline
item of a new utterance (its speech_started, transcription events, end) off
the wire and asks the VAD for its words (:class:`ProbeSpeech`: an urgent STT
pass on the speech so far, the moment the VAD reports it, and again while the
words leave it undecided). The rule is :func:`speech_to_speech.turns.listener_words.judge`:

- words that are not a listener's ("wait", "stop", "no, I meant", a question),
  or speech voiced for ``overlap_barge_in_ms``: a **barge-in**, decided the
  moment they are heard. The held items go on in order, as if they had just
  arrived: the answer is cancelled, ``speech_started`` goes out, and the
  utterance is the user's next turn.
- listener words or no words at all, once the utterance's final transcript is
  in: **acknowledged**. Its items are dropped (no event of it reaches the
  client, nothing enters the conversation, nothing answers it) and the answer
  plays on.

Each decision is reported as ``overlap.decision`` to a client that set
``overlap_policy``. :class:`Judged` is pure (no I/O, no clock); the judge
applies it to a session's pipeline items on the event loop.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from speech_to_speech.pipeline.messages.input_audio import SpeechOngoing, SpeechStarted, SpeechStopped
from speech_to_speech.pipeline.messages.transcription import (
    Readings,
    SecondReading,
    SpeculativeTranscript,
    TranscriptionCompleted,
    TranscriptionSnapshot,
)
from speech_to_speech.pipeline.messages.turn_taking import ProbeSpeech
from speech_to_speech.protocol.overlap_decisions import ACKNOWLEDGE
from speech_to_speech.realtime.conversation.overlap import Decision, Overlap
from speech_to_speech.turns.listener_words import (
    Heard,
    Verdict,
    heard_as,
    heard_so_far,
    judge,
    reread,
    words_of,
)

log = logging.getLogger(__name__)

# While its words leave it undecided, an utterance is transcribed again after this much more voice (one
# pass takes ~50-100 ms of a core: a "yeah" gets one or two).
PROBE_STEP_MS = 160
# The first pass hears a quarter second, often part of a first word ("Can" of "Cancel that.", "Okay" of "Okay,
# stop"): the second comes sooner. On blind sets 37-44 offline (320 interruptions, 320 remarks), the median bid
# was decided on 330 ms of voice instead of 410, every interruption still one, and 2 remarks more were cut.
FIRST_STEP_MS = 80
# Items of utterances already acknowledged: later ones (their final transcript) are dropped too.
REMEMBERED = 16


class Judged:
    """One utterance over the answer: what its words are so far, how long it is voiced; decided once."""

    def __init__(self, overlap: Overlap, cap_ms: int) -> None:
        self.overlap = overlap
        self.cap_ms = cap_ms
        self.heard: Heard | None = None
        self.words: str | None = None
        self.remark: tuple[str, ...] | None = None  # the words of its last pass heard as a listener's
        self.voiced_ms = 0
        self.passes = 0  # probe passes heard
        self.stopped = False  # the VAD ended it: only its final transcript is still to come
        self.verdict: Verdict | None = None

    def hear(self, words: str, avg_logprob: float | None = None, *, final: bool = False,
             readings: Readings = (), second_reading: SecondReading | None = None,
             hum_gap: float | None = None) -> Verdict | None:
        """The words of an STT pass on it (cumulative), or (``final``) of the whole utterance, how sure the
        STT was of them, its other readings of the same speech, (final) a larger model's reading of it, and
        how much less likely the STT found a hum."""
        classify = heard_as if final else heard_so_far
        self.passes += not final
        heard = classify(words, avg_logprob, readings, hum_gap)
        if final:
            heard = reread(self.remark, words, heard, second_reading)
        if heard is Heard.LISTENER:
            self.remark = words_of(words)
        self.words, self.heard = words, heard
        return self._judge(final=final)

    def voiced(self, speech_ms: int, *, stopped: bool = False) -> Verdict | None:
        """Its voiced span so far (``stopped``: the VAD ended it, at this span)."""
        self.voiced_ms = max(self.voiced_ms, speech_ms)
        self.stopped = self.stopped or stopped
        return self._judge(final=False)

    def _judge(self, *, final: bool) -> Verdict | None:
        if self.verdict is not None:
            return None
        self.verdict = judge(self.heard, self.voiced_ms, final=final, cap_ms=self.cap_ms)
        return self.verdict


class _Gate(Protocol):
    """What the judge needs of the session's overlap gate (conversation/overlap.py)."""

    def judges(self, item: SpeechStarted) -> Overlap | None: ...

    def judged(self, overlap: Overlap, decision: Decision, words: str | None) -> None: ...


class OverlapJudge:
    """Holds the pipeline items of speech over the answer until its words decide (runs on the event loop)."""

    def __init__(self, gate: _Gate, *, cap_ms: Callable[[], int], probe: Callable[[ProbeSpeech], None],
                 pause_words: Callable[[SpeculativeTranscript], None]) -> None:
        self._gate = gate
        self._cap_ms = cap_ms
        self._probe = probe
        self._pause_words = pause_words  # the VAD's turn decision still weighs a held pause's words
        self._held: dict[str | None, tuple[Judged, list[Any]]] = {}
        self._acknowledged: deque[str | None] = deque(maxlen=REMEMBERED)

    def take(self, item: Any) -> list[Any]:
        """The items to translate now, in order, for this pipeline item: none (held or dropped), the item
        itself, or (a barge-in decided) everything held of its utterance."""
        item_id = getattr(item, "item_id", None)
        if isinstance(item, SpeechStarted):
            overlap = self._gate.judges(item)
            if overlap is None or item_id is None:
                return [item]
            judged = Judged(overlap, self._cap_ms())
            self._held[item_id] = (judged, [item])
            self._probe(ProbeSpeech(item_id))
            return self._decide(judged, judged.voiced(item.speech_ms))
        if item_id is None:
            return [item]
        if item_id in self._acknowledged:
            return []
        held = self._held.get(item_id)
        if held is None:
            return [item]
        judged, items = held
        items.append(item)
        return self._decide(judged, self._weigh(judged, item))

    def _weigh(self, judged: Judged, item: Any) -> Verdict | None:
        if isinstance(item, SpeechOngoing):
            return judged.voiced(item.speech_ms)
        if isinstance(item, SpeechStopped):
            return judged.voiced(item.speech_ms or 0, stopped=True)
        if isinstance(item, TranscriptionCompleted):
            verdict = judged.hear(item.transcript, item.avg_logprob, final=True, readings=item.readings,
                                  second_reading=item.second_reading, hum_gap=item.hum_gap)
            _logged(judged, "end", item.avg_logprob, item.hum_gap)
            return verdict
        if isinstance(item, SpeculativeTranscript):
            self._pause_words(item)  # so that a pause can still end the held turn
            return None
        if isinstance(item, TranscriptionSnapshot):
            verdict = judged.hear(item.text, item.avg_logprob, readings=item.readings, hum_gap=item.hum_gap)
            _logged(judged, "pass", item.avg_logprob, item.hum_gap)
            if verdict is None and not judged.stopped:
                self._probe(ProbeSpeech(judged.overlap.item_id, next_probe_ms(judged.passes)))
            return verdict
        return None

    def _decide(self, judged: Judged, verdict: Verdict | None) -> list[Any]:
        if verdict is None:
            return []
        item_id = judged.overlap.item_id
        _, items = self._held.pop(item_id)
        self._gate.judged(judged.overlap, Decision(verdict.action, verdict.reason, judged.voiced_ms),
                          judged.words)
        if verdict.action == ACKNOWLEDGE:
            self._acknowledged.append(item_id)
            return []
        return items


def next_probe_ms(passes: int) -> int:
    """How much more voice the next probe of undecided speech waits for, after ``passes`` probe passes."""
    return FIRST_STEP_MS if passes <= 1 else PROBE_STEP_MS


def _logged(judged: Judged, which: str, avg_logprob: float | None, hum_gap: float | None) -> None:
    """Each pass weighed, for tracing a live verdict: its words, how sure the STT was, and what they were heard as."""
    log.debug("speech over the answer %s, %s at %d ms voiced: %r (mean log-prob %s, hum gap %s) heard as %s",
              judged.overlap.item_id, which, judged.voiced_ms, judged.words, avg_logprob, hum_gap,
              judged.heard.value if judged.heard else None)
