"""PipelineUnit: the queues and handler threads of one session.

    recv_audio_chunks -> VAD -> spoken_prompt -> STT -> stt_output -> TranscriptionNotifier
                          |                                               |
                          +------------> text_output (to the router) <----+
    lm_request -> LLM -> lm_output -> LMOutputProcessor -> tts_input -> TTS -> send_audio_chunks

With the viseme stage (``--enable_visemes``) the TTS feeds ``tts_output`` and
the stage feeds ``send_audio_chunks``: TTS -> tts_output -> visemes -> send_audio_chunks.

``text_output`` and ``send_audio_chunks`` wake the router's send loop. Model
weights live in the shared backends; everything per session (VAD state,
partial hypotheses, config) lives in the handlers of the unit.
"""

from __future__ import annotations

import itertools
import logging
import queue
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from speech_to_speech.audio.chunker import Chunker
from speech_to_speech.llm.base import LLMHandler
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import BaseHandler, HandlerContext
from speech_to_speech.pipeline.lm_output_processor import FIRST_CHUNK_WORDS, LMOutputProcessor
from speech_to_speech.pipeline.messages import (
    AudioChunk,
    ClearInput,
    CommitInput,
    PipelineEnd,
    ReplyReady,
    SessionEnd,
    SpeculativeTranscript,
)
from speech_to_speech.pipeline.queues import NotifyingQueue
from speech_to_speech.pipeline.session_config import ConfigHolder, RuntimeConfig
from speech_to_speech.pipeline.transcription_notifier import TranscriptionNotifier

log = logging.getLogger(__name__)

_session_tokens = itertools.count(1)

# (context, queue_in, queue_out, events_out) -> handler; events_out is text_output.
StageBuilder = Callable[[HandlerContext, "queue.Queue[Any]", "queue.Queue[Any]", NotifyingQueue], BaseHandler]


@dataclass(frozen=True)
class StageBuilders:
    vad: StageBuilder
    stt: StageBuilder
    llm: StageBuilder
    tts: StageBuilder
    visemes: StageBuilder | None = None  # optional, after the TTS


@dataclass
class PipelineQueues:
    recv_audio_chunks: queue.Queue[Any] = field(default_factory=queue.Queue)
    spoken_prompt: queue.Queue[Any] = field(default_factory=queue.Queue)
    stt_output: queue.Queue[Any] = field(default_factory=queue.Queue)
    text_output: NotifyingQueue = field(default_factory=NotifyingQueue)
    lm_request: queue.Queue[Any] = field(default_factory=queue.Queue)
    lm_output: queue.Queue[Any] = field(default_factory=queue.Queue)
    tts_input: queue.Queue[Any] = field(default_factory=queue.Queue)
    tts_output: queue.Queue[Any] = field(default_factory=queue.Queue)  # only with the viseme stage
    send_audio_chunks: NotifyingQueue = field(default_factory=NotifyingQueue)


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
        self.handlers: dict[str, BaseHandler] = {
            "vad": builders.vad(self.context, q.recv_audio_chunks, q.spoken_prompt, q.text_output),
            "stt": builders.stt(self.context, q.spoken_prompt, q.stt_output, q.text_output),
            "transcription_notifier": TranscriptionNotifier(self.context, q.stt_output, q.text_output),
            "llm": builders.llm(self.context, q.lm_request, q.lm_output, q.text_output),
            "lm_output_processor": LMOutputProcessor(self.context, q.lm_output, q.tts_input, first_chunk_words),
        }
        if builders.visemes is None:
            self.handlers["tts"] = builders.tts(self.context, q.tts_input, q.send_audio_chunks, q.text_output)
        else:
            self.handlers["tts"] = builders.tts(self.context, q.tts_input, q.tts_output, q.text_output)
            self.handlers["visemes"] = builders.visemes(self.context, q.tts_output, q.send_audio_chunks, q.text_output)
        self._tell_llm_what_the_voice_speaks()
        self.started = False

    def _tell_llm_what_the_voice_speaks(self) -> None:
        """A local LLM then writes only what the voice can say (llm/speakable.py)."""
        llm, capabilities = self.handlers["llm"], getattr(self.handlers["tts"], "language_capabilities", None)
        if isinstance(llm, LLMHandler) and self._declared_voice_languages is not None:
            llm.voice_languages = self._declared_voice_languages
        elif isinstance(llm, LLMHandler) and capabilities is not None:
            llm.voice_languages = capabilities.languages

    @property
    def voices(self) -> tuple[str, ...] | None:
        """The names of its TTS's voices; None when the backend cannot list them."""
        voices: tuple[str, ...] | None = getattr(self.handlers["tts"], "voices", None)
        return voices

    @property
    def detects_turns(self) -> bool:
        """Its VAD has a turn detector (so its sessions may use ``semantic_vad``)."""
        return getattr(self.handlers["vad"], "turn_detector", None) is not None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        for name, handler in self.handlers.items():
            handler.start(f"unit{self.index}-{name}")
        self.started = True

    def stop(self, timeout: float = 2.0) -> None:
        self.queues.recv_audio_chunks.put(PipelineEnd())
        self.queues.lm_request.put(PipelineEnd())
        for handler in self.handlers.values():
            if handler.thread is not None:
                handler.thread.join(timeout)

    def healthy(self) -> bool:
        return self.started and all(h.is_alive() for h in self.handlers.values())

    def dead_stages(self) -> list[str]:
        return [name for name, h in self.handlers.items() if not h.is_alive()]

    # ------------------------------------------------------------ input

    def push_audio(self, samples_16k: Any) -> None:
        """Queue 16 kHz float32 audio for the VAD in 512-sample chunks."""
        for chunk, offset in self.chunker.push(samples_16k):
            self.queues.recv_audio_chunks.put(AudioChunk(chunk, offset))

    def commit_input(self, item_id: str | None = None) -> None:
        """End the user turn now with everything pushed so far (input_audio_buffer.commit)."""
        for chunk, offset in self.chunker.flush():
            self.queues.recv_audio_chunks.put(AudioChunk(chunk, offset))
        self.queues.recv_audio_chunks.put(CommitInput(item_id))

    def clear_input(self) -> None:
        """Drop buffered, uncommitted user audio (input_audio_buffer.clear)."""
        self.chunker.discard()
        self.queues.recv_audio_chunks.put(ClearInput())

    def report_words(self, words: SpeculativeTranscript) -> None:
        """The words of a pause's speculative STT pass, for the VAD's turn decision to weigh.

        They join the VAD's input queue, so they are weighed on its thread in
        order with the audio that came before them.
        """
        if self.detects_turns:
            self.queues.recv_audio_chunks.put(words)

    def report_reply_ready(self, ready: ReplyReady) -> None:
        """The speculative reply to a pause's words can play (or none will come): a finished turn may end."""
        if self.detects_turns:
            self.queues.recv_audio_chunks.put(ready)

    def submit(self, request: Any) -> None:
        """Queue a GenerateResponseRequest (or control item) for the LLM."""
        self.queues.lm_request.put(request)

    # ------------------------------------------------------------ session end

    def begin_session_end(self) -> int:
        """Send the soft-reset sentinel down both branches; returns its token."""
        token = next(_session_tokens)
        self.cancel_scope.cancel()  # nothing in flight survives the session
        self.chunker.reset()
        self.queues.recv_audio_chunks.put(SessionEnd(token))
        self.queues.lm_request.put(SessionEnd(token))
        return token

    def wait_drained(self, token: int, timeout: float) -> bool:
        """Consume both output queues until the sentinel with ``token`` came out of each."""
        import time

        deadline = time.monotonic() + timeout
        for tail in (self.queues.text_output, self.queues.send_audio_chunks):
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
