"""LMOutputProcessor: ordered LLM parts in, clause-sized TTS inputs out."""

from __future__ import annotations

import queue
import random
from collections.abc import Iterator
from typing import Any

import pytest

from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.lm_output_processor import LMOutputProcessor, split_ready
from speech_to_speech.pipeline.messages.control import PipelineEnd
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    AssistantToolCallPart,
    ResponseDone,
    TokenUsage,
)
from speech_to_speech.pipeline.messages.speech_output import TTSInput
from speech_to_speech.pipeline.session_config import ConfigHolder, RuntimeConfig
from speech_to_speech.testing.engine import collect

TEXT = (
    "Paris is the capital of France.  It sits on the Seine, a river that crosses the city,"
    " and it is famous for its museums, its food and its long history!\nAnything else? Just ask…"
)


class Processor:
    """A running LMOutputProcessor with its own scope and queues."""

    def __init__(self, config: RuntimeConfig | None = None) -> None:
        self.scope = CancelScope()
        self.config = ConfigHolder(config)
        self.queue_in: queue.Queue[Any] = queue.Queue()
        self.queue_out: queue.Queue[Any] = queue.Queue()
        self.handler = LMOutputProcessor(HandlerContext(self.scope, self.config), self.queue_in, self.queue_out)
        self.handler.start("test-lm-output")

    def feed(self, *items: Any) -> None:
        for item in items:
            self.queue_in.put(item)

    def until_done(self, response_id: str = "r") -> list[Any]:
        return collect(self.queue_out, lambda i: isinstance(i, ResponseDone) and i.response_id == response_id)

    def stop(self) -> None:
        self.queue_in.put(PipelineEnd())
        assert self.handler.thread is not None
        self.handler.thread.join(2)


@pytest.fixture
def processor() -> Iterator[Processor]:
    running = Processor()
    yield running
    running.stop()


def text_parts(chunks: list[str], response_id: str = "r", generation: int = 0) -> list[AssistantTextPart]:
    return [AssistantTextPart(response_id, generation, chunk) for chunk in chunks]


def random_chunks(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    chunks, start = [], 0
    while start < len(text):
        end = min(len(text), start + rng.randint(1, 12))
        chunks.append(text[start:end])
        start = end
    return chunks


def tts_texts(items: list[Any]) -> list[str]:
    return [i.text for i in items if isinstance(i, TTSInput)]


@pytest.mark.parametrize("seed", range(8))
def test_tts_inputs_concatenate_to_the_streamed_text_exactly(processor: Processor, seed: int) -> None:
    processor.feed(*text_parts(random_chunks(TEXT, seed)), ResponseDone("r", 0))
    texts = tts_texts(processor.until_done())
    assert "".join(texts) == TEXT
    assert len(texts) > 3  # it really was cut into clauses


def test_sentences_are_cut_after_their_punctuation_and_spaces(processor: Processor) -> None:
    processor.feed(*text_parts(["Hello there. How", " are you?  Fine", "!"]), ResponseDone("r", 0))
    assert tts_texts(processor.until_done()) == ["Hello there. ", "How are you?  ", "Fine!"]


def test_japanese_sentences_are_cut_at_their_own_marks(processor: Processor) -> None:
    """Japanese writes no space after 。: a reply must not wait whole for the voice (Kokoro took 1-3 s)."""
    processor.feed(*text_parts(["日本の首都は", "東京です。とても", "大きな都市で、", "人口は多いです", "。"]))
    first = collect(processor.queue_out, TTSInput)
    assert tts_texts(first) == ["日本の首都は東京です。"]
    processor.feed(ResponseDone("r", 0))
    assert tts_texts(processor.until_done()) == ["とても大きな都市で、人口は多いです。"]


def test_a_clause_goes_out_before_the_response_ends(processor: Processor) -> None:
    processor.feed(*text_parts(["The first sentence is here. ", "The second one is still"]))
    first = collect(processor.queue_out, TTSInput)
    assert tts_texts(first) == ["The first sentence is here. "]
    processor.feed(ResponseDone("r", 0))
    assert tts_texts(processor.until_done()) == ["The second one is still"]


def test_only_the_first_clause_is_split_early() -> None:
    ready, rest = split_ready("Well, I think that, in the end, we know, the answer is yes", first=True)
    assert ready == ["Well, I think that, "]
    assert rest == "in the end, we know, the answer is yes"
    later, rest = split_ready("in the end, we know, the answer is yes, without any doubt", first=False)
    assert later == ["in the end, we know, the answer is yes, "]
    assert rest == "without any doubt"


def test_leading_whitespace_of_a_reply_is_not_spoken(processor: Processor) -> None:
    processor.feed(*text_parts(["  ", "\n Hi", " there."]), ResponseDone("r", 0))
    assert tts_texts(processor.until_done()) == ["Hi there."]


def test_a_tool_call_flushes_the_text_before_it_and_order_is_kept(processor: Processor) -> None:
    call = AssistantToolCallPart("r", 0, "call_1", "get_weather", '{"city": "Paris"}')
    usage = TokenUsage("r", 0, input_tokens=5, output_tokens=7)
    processor.feed(*text_parts(["Let me", " check"]), call, *text_parts([" the weather", " now"]), usage)
    processor.feed(ResponseDone("r", 0))
    items = processor.until_done()
    kinds = [type(i).__name__ for i in items]
    assert kinds == ["TTSInput", "AssistantToolCallPart", "TTSInput", "TokenUsage", "ResponseDone"]
    assert tts_texts(items) == ["Let me check", " the weather now"]
    assert items[1] == call and items[3] == usage


def test_tts_inputs_carry_the_response_generation_and_session_voice() -> None:
    running = Processor(RuntimeConfig(voice="nova", language="fr", output_modalities=("text",)))
    try:
        running.feed(*text_parts(["Bonjour."], "r7", generation=0), ResponseDone("r7", 0))
        (tts,) = [i for i in running.until_done("r7") if isinstance(i, TTSInput)]
        assert (tts.response_id, tts.generation, tts.voice, tts.language) == ("r7", 0, "nova", "fr")
        assert tts.speak is False  # text-only session: transcript, no audio
    finally:
        running.stop()


def test_stale_text_is_dropped_but_the_sentinel_and_usage_pass(processor: Processor) -> None:
    processor.feed(*text_parts(["Half a sentence that"]))
    processor.scope.cancel()
    usage = TokenUsage("r", 0, output_tokens=4)
    processor.feed(*text_parts([" never ends. More."]), usage, ResponseDone("r", 0, status="cancelled"))
    items = processor.until_done()
    assert tts_texts(items) == []
    assert items == [usage, ResponseDone("r", 0, status="cancelled")]


def test_a_new_response_starts_with_an_empty_buffer(processor: Processor) -> None:
    processor.feed(*text_parts(["Unfinished", " words"], "a"), ResponseDone("a", 0))
    processor.feed(*text_parts(["Second reply."], "b"), ResponseDone("b", 0))
    assert tts_texts(processor.until_done("a")) == ["Unfinished words"]
    assert tts_texts(processor.until_done("b")) == ["Second reply."]


def test_a_second_request_of_the_same_response_id_does_not_inherit_the_first_ones_text(
    processor: Processor,
) -> None:
    # A speculative request cancelled mid-sentence whose terminal was lost, then the real request
    # of the same response in the next generation: its text starts from nothing.
    processor.feed(*text_parts(["Half a sentence that"]))
    processor.scope.cancel()
    processor.feed(AssistantTextPart("r", 1, "The real answer."), ResponseDone("r", 1))
    items = processor.until_done()
    assert tts_texts(items) == ["The real answer."]
    assert {i.generation for i in items if isinstance(i, TTSInput)} == {1}


def test_the_first_chunk_may_end_after_a_few_words_before_any_punctuation() -> None:
    ready, rest = split_ready("The weather today is mostly sunny", first=True, first_chunk_words=4)
    assert ready == ["The weather today is "]
    assert rest == "mostly sunny"
    # A word still being written does not count: only words followed by whitespace are complete.
    assert split_ready("The weather today is", first=True, first_chunk_words=4) == ([], "The weather today is")
    # Later chunks wait for punctuation, and 0 turns the early cut off.
    assert split_ready("and then it rains a lot more", first=False, first_chunk_words=4)[0] == []
    assert split_ready("The weather today is mostly sunny", first=True, first_chunk_words=0)[0] == []


def test_streamed_reply_starts_speech_after_three_words_and_keeps_the_text_exact(processor: Processor) -> None:
    reply = ["The", " moon", " is", " about", " 384,400", " kilometres", " away.", " It", " orbits", " us."]
    processor.feed(*text_parts(reply), ResponseDone("r", 0))
    chunks = tts_texts(processor.until_done())
    assert chunks[0] == "The moon is "  # the server's default, FIRST_CHUNK_WORDS
    assert "".join(chunks) == "".join(reply)


def test_each_clause_carries_its_spoken_form_while_the_transcript_keeps_the_model_text(processor: Processor) -> None:
    written = "**Dr. Lee** walked 3.5 km 🚶. ```python\nprint('hi')\n```\nIt cost $12."
    processor.feed(AssistantTextPart("r", 0, written), ResponseDone("r", 0))
    inputs = [i for i in processor.until_done() if isinstance(i, TTSInput)]
    assert "".join(i.text for i in inputs) == written
    spoken = " ".join(i.spoken for i in inputs if i.spoken)
    assert spoken == "Doctor Lee walked three point five kilometres. It cost twelve dollars."


def test_the_code_state_of_one_response_does_not_leak_into_the_next(processor: Processor) -> None:
    processor.feed(AssistantTextPart("r", 0, "Code:\n```\nx = 1\n"), ResponseDone("r", 0))
    processor.until_done("r")
    processor.feed(AssistantTextPart("s", 0, "Hello there."), ResponseDone("s", 0))
    inputs = [i for i in processor.until_done("s") if isinstance(i, TTSInput)]
    assert [i.spoken for i in inputs] == ["Hello there."]
