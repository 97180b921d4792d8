"""transformers LLM on the packaged SmolLM2-135M (GGUF converted once into the model cache)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.chat_prompt import chat_turns, render_prompt
from speech_to_speech.llm.transformers_lm import (
    LoadedLM,
    TransformersLM,
    packaged_gguf,
    resolve_source,
)
from speech_to_speech.pipeline.messages import (
    AssistantTextPart,
    ChatMessage,
    GenerateResponseRequest,
    ResponseDone,
    TokenUsage,
)

pytestmark = pytest.mark.real_models
QUESTION = "What is the capital of France?"


def ask(text: str, generation: int = 0, **fields: Any) -> GenerateResponseRequest:
    return GenerateResponseRequest("resp_1", generation, (ChatMessage("user", text),), **fields)


def test_packaged_gguf_is_converted_once_into_the_cache(lm: LoadedLM) -> None:
    folder = Path(lm.source)
    assert folder.name.startswith(packaged_gguf().stem)
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config  # saved as a plain dense model
    # Every way of naming the packaged file lands on the same cached conversion, untouched.
    written = (folder / "config.json").stat().st_mtime_ns
    assert resolve_source(str(packaged_gguf())) == lm.source
    assert resolve_source(str(packaged_gguf().parent)) == lm.source
    assert (folder / "config.json").stat().st_mtime_ns == written


def test_streams_tokens_that_add_up_to_the_whole_reply(lm: LoadedLM, make_handler: Any) -> None:
    settings = ServerSettings()
    llm = make_handler(TransformersLM, lm, settings)
    parts = list(llm.generate(ask(QUESTION)))
    chunks = [p for p in parts if isinstance(p, str)]
    (usage,) = [p for p in parts if isinstance(p, TokenUsage)]
    assert len(chunks) > 1
    assert parts[-1] is usage  # nothing after the usage: the reply ended by itself

    # The same prompt decoded in one go, without the streamer.
    prompt = render_prompt(lm.tokenizer, chat_turns(ask(QUESTION), settings))
    inputs = lm.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    output = lm.model.generate(**inputs, max_new_tokens=settings.max_new_tokens, do_sample=False)
    generated = output[0, inputs["input_ids"].shape[1] :]
    assert "".join(chunks) == lm.tokenizer.decode(generated, skip_special_tokens=True)
    assert "paris" in "".join(chunks).lower()
    assert usage.input_tokens == inputs["input_ids"].shape[1]
    assert usage.output_tokens == len(generated)


def test_token_limit_ends_the_response_incomplete(lm: LoadedLM, make_handler: Any) -> None:
    llm = make_handler(TransformersLM, lm)
    items = list(llm.process(ask("Tell me a long story about a dragon.", max_output_tokens=5)))
    (usage,) = [i for i in items if isinstance(i, TokenUsage)]
    assert usage.output_tokens == 5
    assert isinstance(items[-1], ResponseDone)
    assert (items[-1].status, items[-1].reason) == ("incomplete", "max_output_tokens")


def test_cancel_stops_generation_and_its_worker(lm: LoadedLM, make_handler: Any) -> None:
    llm = make_handler(TransformersLM, lm)
    request = ask("Tell me a long story about a dragon.", generation=llm.cancel_scope.generation)
    stream = llm.process(request)
    texts = []
    for item in stream:
        if isinstance(item, AssistantTextPart):
            texts.append(item)
            if len(texts) == 3:
                llm.cancel_scope.cancel()
                break
    rest = list(stream)
    assert isinstance(rest[-1], ResponseDone) and rest[-1].status == "cancelled"
    assert not [i for i in rest if isinstance(i, AssistantTextPart)]
    assert not [t for t in threading.enumerate() if t.name.endswith("-generate")]  # the worker ended


def test_instructions_replace_the_default_system_prompt(lm: LoadedLM, make_handler: Any) -> None:
    llm = make_handler(TransformersLM, lm)
    reply = "".join(
        p
        for p in llm.generate(
            ask("What is your name?", instructions="Your name is Zorblax. Always say your name.")
        )
        if isinstance(p, str)
    )
    assert "zorblax" in reply.lower()


def test_two_units_can_generate_at_once(lm: LoadedLM, make_handler: Any) -> None:
    """The shared model serves concurrent sessions: greedy replies match the ones made alone."""
    questions = ["What is the capital of France?", "Name a colour of the sky."]
    alone = [
        "".join(p for p in make_handler(TransformersLM, lm).generate(ask(q)) if isinstance(p, str))
        for q in questions
    ]
    together: dict[int, str] = {}

    def run(index: int) -> None:
        llm = make_handler(TransformersLM, lm)
        together[index] = "".join(p for p in llm.generate(ask(questions[index])) if isinstance(p, str))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [together[0], together[1]] == alone


def test_tools_render_into_the_prompt_and_parsing_holds_on_the_real_output(lm: LoadedLM, make_handler: Any) -> None:
    from speech_to_speech.llm.tools import CALL_OPEN
    from speech_to_speech.pipeline.messages import AssistantToolCallPart

    weather = {"type": "function", "name": "get_weather", "description": "Current weather for a city.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    settings = ServerSettings()
    question = ask("What is the weather in Paris right now? Use the tool.", tools=(weather,))
    prompt = render_prompt(lm.tokenizer, chat_turns(question, settings))
    assert "def get_weather(city: str):" in prompt and CALL_OPEN in prompt
    parts = list(make_handler(TransformersLM, lm, settings).generate(question))
    # Whatever the small model writes, call syntax never reaches the spoken text, and any call
    # that comes out names a registered tool with arguments that parse as JSON.
    spoken = "".join(p for p in parts if isinstance(p, str))
    assert CALL_OPEN not in spoken and "</tool_call>" not in spoken
    calls = [p for p in parts if isinstance(p, AssistantToolCallPart)]
    assert spoken.strip() or calls
    for call in calls:
        assert call.name == "get_weather"
        assert isinstance(json.loads(call.arguments)["city"], str)
