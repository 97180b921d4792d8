"""STTHandler: utterances in, transcripts out; backends implement ``transcribe``."""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any, ClassVar, NamedTuple

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import STTSettings
from speech_to_speech.cpu import gate as cpu_gate
from speech_to_speech.pipeline.handler import BackendHandler, HandlerContext
from speech_to_speech.pipeline.messages.control import StageError
from speech_to_speech.pipeline.messages.input_audio import Utterance
from speech_to_speech.pipeline.messages.transcription import Readings, SecondReading, Transcript
from speech_to_speech.pipeline.queue_items import Transcripts, Utterances
from speech_to_speech.pipeline.queues import Sink

MIN_SAMPLES = PIPELINE_RATE // 10
PROBED_REMEMBERED = 16  # utterances over the answer whose final pass still gives its readings


class Heard(NamedTuple):
    """A transcript, its language, and how likely its speech went on where it ends as a sentence.

    ``continuation`` is the STT's own doubt about the final punctuation
    (:attr:`speech_to_speech.stt.whisper_window.Decoded.continuation`); None
    where the backend does not measure it. A backend's ``transcribe`` may
    return a plain ``(text, language)`` pair instead.
    """

    text: str
    language: str | None
    continuation: float | None = None
    # How sure the decoder was of the words: their mean log-probability (None where not measured). Whisper
    # writes a hum it cannot spell as some word ("Mama" for "mm-hmm") with little confidence.
    avg_logprob: float | None = None
    # Where asked (:meth:`STTHandler.wants_readings`): the decoder's best readings of the same speech. A
    # remark over the answer is judged by them too: "Cool." heard as "Come on.", with "C'mon." close behind.
    readings: Readings = ()
    second_reading: SecondReading | None = None  # see Transcript.second_reading
    hum_gap: float | None = None  # see Transcript.hum_gap


class PassAbandoned(Exception):
    """A backend stops a speculative pass between its phases: :meth:`STTHandler.still_wanted` said no."""


class STTHandler(BackendHandler[Utterance, Transcript]):
    """Transcribes each utterance once.

    A speculative utterance (the speech so far, at a pause) is transcribed
    and remembered; when the turn then ends with no speech after that pause
    (``reuses`` names it), its transcript is final at once, so the STT's
    time is spent inside the VAD's silence window instead of after it. A
    speculative utterance whose turn has a newer utterance waiting already
    is not transcribed at all: the newer one supersedes it. One that is
    superseded while it runs stops at the backend's next
    :meth:`still_wanted` (faster-whisper asks between its encoder and its
    decoder), so the newer pass does not wait behind work no one will use.
    """

    stage = "stt"
    settings: STTSettings  # the stt section
    uses_local_cpu: ClassVar[bool] = True  # False for a backend that only waits on a remote service
    # The last speculative pass: (item_id, its number) and what it heard.
    _speculation: tuple[str | None, int, Heard] | None = None
    _running: Utterance | None = None  # the utterance being transcribed
    _last_pass_s = 0.0  # how long the last transcription took (interim passes wait for a quick one)

    def __init__(self, context: HandlerContext, queue_in: queue.Queue[Utterances], queue_out: Sink[Transcripts] | None,
                 **backend: Any) -> None:
        super().__init__(context, queue_in, queue_out, **backend)
        self._probed: deque[str | None] = deque(maxlen=PROBED_REMEMBERED)  # utterances probed over the answer

    def transcribe(self, samples: FloatAudio, language: str | None) -> Heard | tuple[str, str | None]:
        """Return (text, detected language), or a :class:`Heard`, for 16 kHz float32 mono audio."""
        raise NotImplementedError

    def language(self) -> str | None:
        """The session's language if chosen ("auto" = let the model detect), else the flag."""
        chosen = self.context.config.current.language
        if chosen and chosen != "auto":
            return chosen
        if chosen == "auto":
            return None
        return self.settings.language

    def on_session_end(self) -> None:
        self._speculation = None

    def _text_of(self, item: Utterance) -> Heard:
        cached = self._speculation
        if item.reuse_speculation and cached is not None and cached[:2] == (item.item_id, item.reuses):
            return cached[2]
        return Heard(*self.transcribe_utterance(item))

    def transcribe_utterance(self, item: Utterance) -> Heard | tuple[str, str | None]:
        """What one utterance says; backends needing more than its audio override this."""
        # A commit of (almost) nothing has nothing to transcribe; models may hallucinate on it.
        if len(item.samples) < MIN_SAMPLES:
            return Heard("", None)
        started = time.monotonic()
        heard = Heard(*self.transcribe(item.samples, self.language()))
        self._last_pass_s = time.monotonic() - started
        return heard._replace(text=heard.text.strip())

    def _superseded(self, item: Utterance, *, unless_reused: bool = False) -> bool:
        """A newer utterance of the same turn waits behind this speculative one (``unless_reused``: one
        other than the turn's end that will reuse this very pass)."""
        with self.queue_in.mutex:
            waiting = list(self.queue_in.queue)
        return any(
            isinstance(other, Utterance) and other.item_id == item.item_id
            and not (unless_reused and other.reuse_speculation and other.reuses == item.speculation)
            for other in waiting
        )

    def wants_readings(self) -> bool:
        """Whether the pass running now is of speech over the assistant's answer (a probe, or the end of a
        probed utterance): its words decide whether it interrupts, so the backend gives its other readings."""
        running = self._running
        return running is not None and (running.probe or running.item_id in self._probed)

    def ends_probed(self) -> bool:
        """Whether the pass running now is an utterance's own (not a probe, not interim words) and the
        utterance was probed: speech over the assistant's answer, whose words decide whether it interrupts."""
        running = self._running
        return running is not None and not running.probe and not running.interim and running.item_id in self._probed

    def still_wanted(self) -> bool:
        """Whether the pass running now is still of use; a backend may ask between phases and then raise
        :class:`PassAbandoned`. Only a speculative pass with a newer one of its turn waiting is not,
        unless that is the turn's end, which will take this pass's words as its own."""
        running = self._running
        if running is not None and running.probe:
            return True  # a short urgent pass whose words someone waits for
        if running is not None and running.interim:
            return not self._superseded(running)  # the pause's pass, or a newer interim one, waits behind it
        return running is None or not running.speculative or not self._superseded(running, unless_reused=True)

    def partials(self, item: Utterance, text: str) -> Iterator[Transcript]:
        """Cumulative hypotheses before the final transcript (backends that have them)."""
        return iter(())

    def _interim_pass(self, item: Utterance) -> Iterator[Transcript]:
        """Words of a turn still being spoken: background work, done only when nothing newer of the turn
        waits, no user's urgent work holds every CPU, and this STT is quick enough that a pass running when
        the pause comes does not hold up the pause's own (``--interim_max_pass_ms``). A probe (speech over
        the assistant, whose words decide whether it interrupts) is urgent and always done."""
        urgent = item.probe and self.uses_local_cpu
        if item.probe and item.item_id not in self._probed:
            self._probed.append(item.item_id)
        if not item.probe:
            if self._superseded(item) or self._last_pass_s * 1000 > self.settings.interim_max_pass_ms:
                return
            if self.uses_local_cpu:
                cpu_gate.shared().background_threads(self.settings.threads)  # waits while a user's work runs
                if self._superseded(item):
                    return
        self._running = item
        # Marked as what it is: idle work (a prompt read ahead in idle time) waits for a background pass too.
        running: AbstractContextManager[None] = nullcontext()
        if self.uses_local_cpu:
            gate = cpu_gate.shared()
            running = gate.urgent(self.settings.threads) if urgent else gate.background()
        try:
            with running:
                heard = Heard(*self.transcribe_utterance(item))
        except PassAbandoned:
            return
        finally:
            self._running = None
        yield Transcript(text=heard.text, final=False, item_id=item.item_id, language=heard.language,
                         avg_logprob=heard.avg_logprob, readings=heard.readings, hum_gap=heard.hum_gap)

    def process(self, item: Utterance) -> Iterator[Transcript]:
        if item.interim:
            yield from self._interim_pass(item)
            return
        if item.speculative and self._superseded(item):
            return
        self._running = item
        try:
            # A user waits on every pass: other sessions' long decodes give way to it (cpu/gate.py).
            with cpu_gate.shared().urgent(self.settings.threads) if self.uses_local_cpu else nullcontext():
                heard = self._text_of(item)
        except PassAbandoned:
            if item.speculative:
                return  # the newer pass waiting behind it has the turn's words
            raise  # a backend must not abandon a turn's own pass: reported, and the turn completes empty
        finally:
            self._running = None
        text, language = heard.text, heard.language
        if item.speculative:
            self._speculation = (item.item_id, item.speculation, heard)
            yield Transcript(text=text, final=False, item_id=item.item_id, language=language,
                             speculation=item.speculation, continuation=heard.continuation,
                             avg_logprob=heard.avg_logprob, readings=heard.readings, hum_gap=heard.hum_gap)
            return
        if not item.reuse_speculation:
            yield from self.partials(item, text)
        self._speculation = None
        yield Transcript(
            text=text,
            final=True,
            item_id=item.item_id,
            language=language,
            audio_seconds=len(item.samples) / PIPELINE_RATE,
            manual=item.manual,
            stt_done_time=time.monotonic(),
            ended=item.ended,
            avg_logprob=heard.avg_logprob,
            readings=heard.readings,
            second_reading=heard.second_reading,
            hum_gap=heard.hum_gap,
        )

    def on_error(self, item: Utterance, error: BaseException) -> Iterator[Transcript | StageError]:
        ahead = item.speculative or item.interim
        for report in super().on_error(item, error):
            # A failed pass ahead of the turn's end is done again at the turn's end.
            yield replace(report, retried=True) if ahead and isinstance(report, StageError) else report
        # The turn must still complete so the session does not wait forever.
        if not ahead:
            yield Transcript(
                text="",
                final=True,
                item_id=item.item_id,
                audio_seconds=len(item.samples) / PIPELINE_RATE,
                manual=item.manual,
                stt_done_time=time.monotonic(),
                ended=item.ended,
            )
