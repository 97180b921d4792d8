"""PipelineUnit: the queues and handler threads of one session.

     push_audio, commit_input, clear_input
          |
          v
      vad_input <-------------- TurnVerdict --------------+
       ^  |                                                |
       |  v                                                |
       |  VAD ------------ a pause's audio ------> turn detector (one pool for all units)
       |  |
       |  +--> utterances -> STT -> transcripts -> TranscriptionNotifier
       |  |                                                   |
       |  +--> stage_events <---------------------------------+
       |           |
       |           v
       +------ the service (event loop) <-----------------------------------------------------+
      SpeculativeTranscript,  |                                                               |
      ReplyReady, ProbeSpeech +--> llm_requests -> LLM -> llm_output -> LMOutputProcessor     |
                                   -> tts_input -> TTS -> response_output --------------------+

Turn-taking is a loop, not a line: the turn detector's verdict (``reply_to``)
and what the service reports (``report_words``, ``report_reply_ready``,
``probe_speech``) come back on ``vad_input``; ``TurnFeedback`` in
pipeline/queue_items.py names them, docs/architecture.md draws the loop.

With the viseme stage (``--enable_visemes``) the TTS feeds ``tts_output`` and
the stage feeds ``response_output``: TTS -> tts_output -> visemes -> response_output.

``stage_events`` and ``response_output`` wake the service's send loop (realtime/service/send_loop.py). Model
weights live in the shared backends; everything per session (VAD state,
partial hypotheses, config) lives in the handlers of the unit.
"""

from __future__ import annotations

import itertools
import logging
import queue
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech.audio.chunker import Chunker
from speech_to_speech.llm.answer_language import reply_language
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.lm_output_processor import FIRST_CHUNK_WORDS, LMOutputProcessor
from speech_to_speech.pipeline.messages.control import PipelineEnd, SessionEnd
from speech_to_speech.pipeline.messages.generation import Preamble
from speech_to_speech.pipeline.messages.input_audio import AudioChunk, ClearInput, CommitInput
from speech_to_speech.pipeline.messages.transcription import SpeculativeTranscript
from speech_to_speech.pipeline.messages.turn_taking import ProbeSpeech, ReplyReady
from speech_to_speech.pipeline.queue_items import (
    LLMOutput,
    LLMRequest,
    ResponseOutput,
    StageEvent,
    Transcripts,
    TTSOutput,
    TTSQueueItem,
    Utterances,
    VADInput,
)
from speech_to_speech.pipeline.queues import NotifyingQueue
from speech_to_speech.pipeline.session_config import ConfigHolder, RuntimeConfig
from speech_to_speech.pipeline.transcription_notifier import TranscriptionNotifier
from speech_to_speech.units.stages import StageBuilders, UnitStages

log = logging.getLogger(__name__)

_session_tokens = itertools.count(1)


@dataclass
class PipelineQueues:
    """The queues of one unit, named by what they carry (pipeline/queue_items.py)."""

    vad_input: queue.Queue[VADInput] = field(default_factory=queue.Queue)
    utterances: queue.Queue[Utterances] = field(default_factory=queue.Queue)
    transcripts: queue.Queue[Transcripts] = field(default_factory=queue.Queue)
    stage_events: NotifyingQueue[StageEvent] = field(default_factory=NotifyingQueue)
    llm_requests: queue.Queue[LLMRequest] = field(default_factory=queue.Queue)
    llm_output: queue.Queue[LLMOutput] = field(default_factory=queue.Queue)
    tts_input: queue.Queue[TTSQueueItem] = field(default_factory=queue.Queue)
    tts_output: queue.Queue[TTSOutput] = field(default_factory=queue.Queue)  # only with the viseme stage
    response_output: NotifyingQueue[ResponseOutput] = field(default_factory=NotifyingQueue)


class PipelineUnit:
    def __init__(
        self,
        index: int,
        builders: StageBuilders,
        config: RuntimeConfig | None = None,
        first_chunk_words: int = FIRST_CHUNK_WORDS,
        voice_languages: Sequence[str] | None = None,
    ) -> None:
        """``voice_languages``: the languages declared for the TTS (--tts_supported_languages), which the LLM
        then writes for in place of those the TTS itself says it speaks."""
        self.index = index
        self._declared_voice_languages = tuple(voice_languages) if voice_languages else None
        self.cancel_scope = CancelScope()
        self.config = ConfigHolder(config)
        self.context = HandlerContext(self.cancel_scope, self.config)
        self.queues = q = PipelineQueues()
        self.chunker = Chunker()
        visemes = builders.visemes
        self.stages = UnitStages(
            vad=builders.vad(self.context, q.vad_input, q.utterances, q.stage_events),
            stt=builders.stt(self.context, q.utterances, q.transcripts, q.stage_events),
            transcription_notifier=TranscriptionNotifier(self.context, q.transcripts, q.stage_events),
            llm=builders.llm(self.context, q.llm_requests, q.llm_output, q.stage_events),
            lm_output_processor=LMOutputProcessor(self.context, q.llm_output, q.tts_input, first_chunk_words),
            tts=builders.tts(self.context, q.tts_input, q.response_output if visemes is None else q.tts_output,
                             q.stage_events),
            visemes=None if visemes is None else visemes(self.context, q.tts_output, q.response_output,
                                                          q.stage_events),
        )
        self._tell_llm_what_the_voice_speaks()
        self.started = False

    def _tell_llm_what_the_voice_speaks(self) -> None:
        """A local LLM then writes only what the voice can say (llm/speakable.py)."""
        declared = self._declared_voice_languages
        self.stages.llm.voice_languages = (declared if declared is not None
                                           else self.stages.tts.language_capabilities.languages)

    def reply_language(self, asked: str | None) -> str | None:
        """The language a reply asked for in ``asked`` is written and spoken in: that one where the voice speaks
        it, else the voice's first (llm/answer_language.py); None: unknown."""
        return reply_language(asked, self.stages.llm.voice_languages)

    @property
    def voices(self) -> tuple[str, ...] | None:
        """The names of its TTS's voices; None when the backend cannot list them."""
        return self.stages.tts.voices

    @property
    def detects_turns(self) -> bool:
        """Its VAD has a turn detector (so its sessions may use ``semantic_vad``)."""
        return self.stages.vad.turn_detector is not None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        for name, handler in self.stages.by_name().items():
            handler.start(f"unit{self.index}-{name}")
        self.started = True

    def stop(self, timeout: float = 2.0) -> None:
        self.queues.vad_input.put(PipelineEnd())
        self.queues.llm_requests.put(PipelineEnd())
        for handler in self.stages.by_name().values():
            if handler.thread is not None:
                handler.thread.join(timeout)

    def healthy(self) -> bool:
        return self.started and all(h.is_alive() for h in self.stages.by_name().values())

    def dead_stages(self) -> list[str]:
        return [name for name, h in self.stages.by_name().items() if not h.is_alive()]

    # ------------------------------------------------------------ input

    def push_audio(self, samples_16k: Any, echoed: bool = False) -> None:
        """Queue 16 kHz float32 audio for the VAD in 512-sample chunks (``echoed``: heard while the server's
        echo canceller played the assistant's audio)."""
        for chunk, offset in self.chunker.push(samples_16k):
            self.queues.vad_input.put(AudioChunk(chunk, offset, echoed))

    def commit_input(self, item_id: str | None = None) -> None:
        """End the user turn now with everything pushed so far (input_audio_buffer.commit)."""
        for chunk, offset in self.chunker.flush():
            self.queues.vad_input.put(AudioChunk(chunk, offset))
        self.queues.vad_input.put(CommitInput(item_id))

    def clear_input(self) -> None:
        """Drop buffered, uncommitted user audio (input_audio_buffer.clear)."""
        self.chunker.discard()
        self.queues.vad_input.put(ClearInput())

    def report_words(self, words: SpeculativeTranscript) -> None:
        """The words of a pause's speculative STT pass, for the VAD's turn decision to weigh.

        They join the VAD's input queue, so they are weighed on its thread in
        order with the audio that came before them.
        """
        if self.detects_turns:
            self.queues.vad_input.put(words)

    def probe_speech(self, probe: ProbeSpeech) -> None:
        """Ask the VAD for the words of the speech being judged (speech over the assistant's answer)."""
        self.queues.vad_input.put(probe)

    def report_reply_ready(self, ready: ReplyReady) -> None:
        """The speculative reply to a pause's words can play (or none will come): a finished turn may end."""
        if self.detects_turns:
            self.queues.vad_input.put(ready)

    def say_preamble(self, preamble: Preamble) -> None:
        """A preamble for a reply the user waits for: joins the model's output, where the output processor
        says it only if nothing of that reply was said or is on its way (pipeline/lm_output_processor.py)."""
        self.queues.llm_output.put(preamble)

    def submit(self, request: LLMRequest) -> None:
        """Queue a GenerateResponseRequest (or control item) for the LLM."""
        self.queues.llm_requests.put(request)

    # ------------------------------------------------------------ session end

    def begin_session_end(self) -> int:
        """Send the soft-reset sentinel down both branches; returns its token."""
        token = next(_session_tokens)
        self.cancel_scope.cancel()  # nothing in flight survives the session
        self.chunker.reset()
        self.queues.vad_input.put(SessionEnd(token))
        self.queues.llm_requests.put(SessionEnd(token))
        return token

    def wait_drained(self, token: int, timeout: float) -> bool:
        """Consume both output queues until the sentinel with ``token`` came out of each."""
        import time

        deadline = time.monotonic() + timeout
        for tail in (self.queues.stage_events, self.queues.response_output):
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                try:
                    item = tail.get(timeout=remaining)
                except queue.Empty:
                    return False
                if isinstance(item, SessionEnd) and item.token == token:
                    break
        return True

    def reset_for_new_session(self) -> None:
        self.config.reset()
        self.cancel_scope.cancel()  # nothing in flight survives the session
