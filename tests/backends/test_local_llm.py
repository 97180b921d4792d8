"""What every local LLM backend does on the packaged SmolLM2-135M: ctranslate2 (default), transformers, llama-cpp."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.base import Terminal
from speech_to_speech.llm.chat_prompt import chat_turns, render_prompt
from speech_to_speech.llm.tools import CALL_OPEN
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    AssistantToolCallPart,
    ChatMessage,
    GenerateResponseRequest,
    ResponseDone,
    TokenUsage,
)

pytestmark = pytest.mark.real_models
QUESTION = "What is the capital of France?"


def ask(text: str, generation: int = 0, **fields: Any) -> GenerateResponseRequest:
    return GenerateResponseRequest("resp_1", generation, (ChatMessage("user", text),), **fields)


def reply(handler: Any, request: GenerateResponseRequest) -> str:
    return "".join(p for p in handler.generate(request) if isinstance(p, str))


def test_streams_a_reply_in_many_chunks_then_the_usage(local_llm: tuple[type, Any], make_handler: Any) -> None:
    cls, model = local_llm
    parts = list(make_handler(cls, model).generate(ask(QUESTION)))
    chunks = [p for p in parts if isinstance(p, str)]
    (usage,) = [p for p in parts if isinstance(p, TokenUsage)]
    assert len(chunks) > 1
    assert "paris" in "".join(chunks).lower()
    assert usage.input_tokens > 10 and usage.output_tokens > 1
    # Where SmolLM2-135M's greedy reply stops depends on the CPU's kernels (on an AVX2-only AMD EPYC,
    # CTranslate2 int8 goes on "… la Galerie, la Galerie, …"): either it ended by itself, with nothing
    # after the usage, or it ran into the limit, and then says so after it.
    after = parts[parts.index(usage) + 1:]
    limit = ServerSettings().llm.max_new_tokens
    if usage.output_tokens < limit:
        assert after == []
    else:
        assert usage.output_tokens == limit and after == [Terminal("incomplete", reason="max_output_tokens")]


def test_token_limit_ends_the_response_incomplete(local_llm: tuple[type, Any], make_handler: Any) -> None:
    cls, model = local_llm
    items = list(make_handler(cls, model).process(ask("Tell me a long story about a dragon.", max_output_tokens=5)))
    (usage,) = [i for i in items if isinstance(i, TokenUsage)]
    assert usage.output_tokens == 5
    assert isinstance(items[-1], ResponseDone)
    assert (items[-1].status, items[-1].reason) == ("incomplete", "max_output_tokens")


def test_cancel_stops_generation_and_its_worker(local_llm: tuple[type, Any], make_handler: Any) -> None:
    cls, model = local_llm
    llm = make_handler(cls, model)
    threads_before = threading.active_count()
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
    assert threading.active_count() == threads_before  # the decoding worker ended with the response


def test_instructions_replace_the_default_system_prompt(
    local_llm: tuple[type, Any], make_handler: Any, prompt_template: Any
) -> None:
    cls, model = local_llm
    settings = ServerSettings()
    request = ask("What is your name?",
                  instructions="You are a helpful assistant named Zorblax. Always say your name.")
    prompt = render_prompt(prompt_template(model), chat_turns(request, settings.llm))
    assert "named Zorblax" in prompt and settings.llm.init_chat_prompt not in prompt
    assert "zorblax" in reply(make_handler(cls, model, settings), request).lower()  # and the model follows them


def test_two_units_can_generate_at_once(local_llm: tuple[type, Any], make_handler: Any) -> None:
    """The shared model serves concurrent sessions: each reply answers its own question, greedy replies
    match the ones made alone.

    Except on llama.cpp: its context reuses the prompt prefix the request before left, so a reply's float
    sums (and a near tie of greedy decoding) depend on which request came first, and the two threads race
    for the context.
    """
    from speech_to_speech.llm.llama_cpp_lm import LlamaCppLM

    cls, model = local_llm
    questions = ["What is the capital of France?", "Name a colour of the sky."]
    keywords = ["paris", "blue"]
    alone = [reply(make_handler(cls, model), ask(q)) for q in questions]
    together: dict[int, str] = {}

    def run(index: int) -> None:
        together[index] = reply(make_handler(cls, model), ask(questions[index]))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(keyword in together[index].lower() for index, keyword in enumerate(keywords)), together
    if cls is not LlamaCppLM:
        assert [together[0], together[1]] == alone


def test_tools_render_into_the_prompt_and_parsing_holds_on_the_real_output(
    local_llm: tuple[type, Any], make_handler: Any, prompt_template: Any
) -> None:
    cls, model = local_llm
    weather = {"type": "function", "name": "get_weather", "description": "Current weather for a city.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    settings = ServerSettings()
    question = ask("What is the weather in Paris right now? Use the tool.", tools=(weather,))
    prompt = render_prompt(prompt_template(model), chat_turns(question, settings.llm))
    assert "def get_weather(city: str):" in prompt and CALL_OPEN in prompt
    parts = list(make_handler(cls, model, settings).generate(question))
    # Whatever the small model writes, call syntax never reaches the spoken text, and any call
    # that comes out names a registered tool with arguments that parse as JSON.
    spoken = "".join(p for p in parts if isinstance(p, str))
    assert CALL_OPEN not in spoken and "</tool_call>" not in spoken
    calls = [p for p in parts if isinstance(p, AssistantToolCallPart)]
    assert spoken.strip() or calls
    for call in calls:
        assert call.name == "get_weather"
        assert isinstance(json.loads(call.arguments)["city"], str)


def test_sampling_from_a_tiny_nucleus_gives_the_greedy_reply(local_llm: tuple[type, Any], make_handler: Any) -> None:
    # top_p is a setting that reaches the sampler: hot sampling kept to the likeliest token is greedy decoding.
    cls, model = local_llm
    request = ask("Name a colour of the sky.", max_output_tokens=12)
    greedy = reply(make_handler(cls, model, ServerSettings(temperature=0.0)), request)
    nucleus = ServerSettings(temperature=1.5, top_p=1e-6)
    assert [reply(make_handler(cls, model, nucleus), request) for _ in range(2)] == [greedy, greedy]


def _repeated_words(text: str) -> int:
    words = [w.strip(".,!?").lower() for w in text.split()]
    return len(words) - len(set(words))


def test_a_repetition_penalty_makes_the_greedy_reply_repeat_itself_less(local_llm: tuple[type, Any],
                                                                        make_handler: Any) -> None:
    cls, model = local_llm
    request = ask("Repeat after me exactly: la la la la la la la la la la la la la la la la", max_output_tokens=30)
    plain = reply(make_handler(cls, model, ServerSettings()), request)
    penalised = reply(make_handler(cls, model, ServerSettings(repetition_penalty=1.8)), request)
    assert _repeated_words(penalised) < _repeated_words(plain), (plain, penalised)
