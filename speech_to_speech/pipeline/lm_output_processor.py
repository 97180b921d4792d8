"""LMOutputProcessor: ordered LLM parts -> TTS inputs, on one queue.

Text is cut at sentence and clause boundaries so the TTS starts speaking on
the first clause rather than the whole reply. Each clause also gets its
spoken form (``speech_text``: no markdown, code, URLs or emoji; numbers and
abbreviations in words) for the voice, while the transcript keeps the
model's text. Tool calls, usage and the
response sentinel pass through in order behind the text before them, so
nothing overtakes anything on the way to the wire.
"""

from __future__ import annotations

import queue
import re
from collections.abc import Iterator

from speech_to_speech.config import LLMSettings
from speech_to_speech.pipeline.handler import BaseHandler, HandlerContext
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    AssistantToolCallPart,
    LLMFirstToken,
    Preamble,
    ResponseDone,
    TokenUsage,
)
from speech_to_speech.pipeline.messages.speech_output import TTSInput
from speech_to_speech.pipeline.queue_items import LLMOutput, TTSQueueItem
from speech_to_speech.pipeline.queues import Sink
from speech_to_speech.speech_text import SpeechText

# A sentence ends at . ! ? … (or a newline) followed by whitespace.
# Japanese and Chinese write no space after their marks (。！？、，): they end a sentence or clause as they are.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])(?=.)|\n+", re.DOTALL)
# A clause ends at , ; : — followed by whitespace; only used once enough text waits.
_CLAUSE_END = re.compile(r"(?<=[,;:—])\s+|(?<=[、，；：])(?=.)", re.DOTALL)
MIN_CLAUSE_CHARS = 24
# Words (followed by whitespace, so complete) that may start speech before any punctuation: the server's default.
FIRST_CHUNK_WORDS: int = LLMSettings.model_fields["first_chunk_words"].default
_COMPLETE_WORD = re.compile(r"\S+\s+")


def split_ready(text: str, first: bool, first_chunk_words: int = 0) -> tuple[list[str], str]:
    """Split ``text`` into chunks ready for speech and the remainder still growing.

    Each chunk keeps its trailing whitespace, so concatenating the chunks and
    the remainder gives back ``text`` exactly. With ``first_chunk_words``, the
    very first chunk of a reply may end at a word boundary after that many
    words when no punctuation came yet: the TTS then starts while the LLM is
    still writing the first sentence.
    """
    ready: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        ready.append(text[start : match.end()])
        start = match.end()
    rest = text[start:]
    # Long clauses split at commas; the very first one sooner, to start audio early.
    while True:
        min_chars = MIN_CLAUSE_CHARS // 2 if first and not ready else MIN_CLAUSE_CHARS
        cut = None
        for match in _CLAUSE_END.finditer(rest):
            if match.start() >= min_chars:
                cut = match.end()
                break
        if cut is None:
            break
        ready.append(rest[:cut])
        rest = rest[cut:]
    if first and not ready and first_chunk_words > 0:
        words = list(_COMPLETE_WORD.finditer(rest))
        if len(words) >= first_chunk_words:
            cut = words[first_chunk_words - 1].end()
            ready.append(rest[:cut])
            rest = rest[cut:]
    return ready, rest


def first_chunk_ready(text: str, first_chunk_words: int) -> bool:
    """Whether a reply that begins with ``text`` has its first chunk ready for speech (the TTS starts)."""
    return bool(split_ready(text, True, first_chunk_words)[0])


# The parts of a response it orders: its text and preamble become clauses, what follows text waits for it.
OrderedPart = AssistantTextPart | AssistantToolCallPart | Preamble | TokenUsage | ResponseDone
# What it sends on: clauses for the TTS, and the other parts behind the clauses before them.
SpeakablePart = TTSInput | AssistantToolCallPart | TokenUsage | ResponseDone


class LMOutputProcessor(BaseHandler[OrderedPart, SpeakablePart, LLMFirstToken]):
    stage = "lm_output_processor"

    def __init__(
        self, context: HandlerContext, queue_in: queue.Queue[LLMOutput], queue_out: Sink[TTSQueueItem] | None,
        first_chunk_words: int = FIRST_CHUNK_WORDS,
    ) -> None:
        super().__init__(context, queue_in, queue_out)
        self.first_chunk_words = first_chunk_words
        self._buffer = ""
        self._response_id: str | None = None
        self._generation = 0
        self._started = False  # any text of this response went out yet
        self._model_spoke = False  # any of the model's own words (not a preamble) came for this request
        self._speech = SpeechText()  # the response's spoken form, clause by clause
        self._language: str | None = None  # the reply's language, as its text parts say

    def on_session_end(self) -> None:
        self._reset(None, 0)

    def _reset(self, response_id: str | None, generation: int) -> None:
        self._buffer = ""
        self._response_id = response_id
        self._generation = generation
        self._started = False
        self._model_spoke = False
        self._speech = SpeechText()
        self._language = None

    def _tts_input(self, text: str) -> TTSInput:
        config = self.context.config.current
        return TTSInput(
            response_id=self._response_id or "",
            generation=self._generation,
            text=text,
            spoken=self._speech.feed(text),
            voice=config.voice,
            # The reply's language where the LLM said (it may be the one the user spoke, not the session's).
            language=self._language or config.language,
            speak="audio" in config.output_modalities,
        )

    def _flush(self) -> Iterator[TTSInput]:
        if self._buffer and not self.cancel_scope.is_stale(self._generation):
            # Text went out: what follows (e.g. after a tool call) keeps its leading space.
            self._started = True
            yield self._tts_input(self._buffer)
        self._buffer = ""

    def process(self, item: OrderedPart) -> Iterator[SpeakablePart]:
        # A response id may be asked twice (a dropped speculation, then the real request): a part
        # belongs to the text so far only if its generation matches too.
        if (item.response_id, item.generation) != (self._response_id, self._generation):
            self._reset(item.response_id, item.generation)
        if isinstance(item, Preamble):
            # A preamble is said only before anything else of the response: text on its way makes it moot,
            # and one said already (the server's, then the model's call) is enough. A holding phrase follows
            # the server's own phrases only: once the model's words of this request came, the answer is
            # under way (a request's parts end with its ResponseDone, which resets all this).
            said = self._model_spoke if item.holding else self._started
            if not said and not self._buffer and not self.cancel_scope.is_stale(item.generation):
                self._started = True
                self._language = item.language or self._language
                yield self._tts_input(item.text.strip() + " ")
            return
        if isinstance(item, AssistantTextPart):
            self._language = item.language or self._language
            self._model_spoke = self._model_spoke or bool(item.text.strip())
            text = item.text
            if not self._started and not self._buffer:
                text = text.lstrip()
            self._buffer += text
            ready, self._buffer = split_ready(self._buffer, not self._started, self.first_chunk_words)
            for chunk in ready:
                self._started = True
                yield self._tts_input(chunk)
            return
        yield from self._flush()
        yield item
        if isinstance(item, ResponseDone):
            self._reset(None, 0)
