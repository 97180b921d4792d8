"""The 1.5B writing the calls the quality preset's 0.5B starts (``--llm_tool_call_model``), on the real models:
the call is the writer's where its context has read the tools, the main model's where it has not, and the
answer to the result is the main model's; a writer with another tokenizer is refused."""

from __future__ import annotations

import json
import logging
from contextlib import ExitStack
from importlib import metadata
from typing import Any

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.chat_prompt import prompt_for
from speech_to_speech.llm.llama_cpp_lm import LlamaCppLM, LoadedLlama, load_llama_cpp
from speech_to_speech.llm.packaged import PACKAGED
from speech_to_speech.llm.weights import packaged_gguf
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    AssistantToolCallPart,
    ChatMessage,
    GenerateResponseRequest,
    PromptPrefill,
)
from speech_to_speech.presets import preset
from speech_to_speech.testing.engine import loading

pytestmark = pytest.mark.real_models

WRITER = "qwen2.5-coder-1.5b"
CONVERT = {"type": "function", "name": "convert_time", "description": "Convert time between timezones",
           "parameters": {"type": "object", "required": ["source_timezone", "time", "target_timezone"],
                          "properties": {
                              "source_timezone": {"type": "string", "description": "Source IANA timezone name"},
                              "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
                              "target_timezone": {"type": "string", "description": "Target IANA timezone name"}}}}
CLOCK = {"type": "function", "name": "get_current_time", "description": "Get current time in a specific timezone",
         "parameters": {"type": "object", "required": ["timezone"],
                        "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}}}}
TOOLS = (CLOCK, CONVERT)


def _settings(**flags: Any) -> ServerSettings:
    values: dict[str, Any] = {**preset("quality"), "llm_contexts": 1, **flags}
    return ServerSettings(**values)


@pytest.fixture(scope="module")
def writing() -> tuple[ServerSettings, LoadedLlama]:
    pytest.importorskip("llama_cpp", reason="the quality preset runs on llama.cpp (the llama-cpp extra)")
    try:
        for pin in PACKAGED[WRITER].packages.split():
            metadata.distribution(pin.split("==")[0])
    except metadata.PackageNotFoundError:
        pytest.skip("the 1.5B's weights are not installed: make weights-1.5b")
    settings = _settings(llm_tool_call_model=WRITER)
    return settings, load_llama_cpp(*loading("llm", settings))


def _request(*messages: ChatMessage) -> GenerateResponseRequest:
    return GenerateResponseRequest("resp_1", 0, messages, tools=TOOLS, max_output_tokens=96)


def _prompt_tokens(model: LoadedLlama, settings: ServerSettings, request: GenerateResponseRequest) -> list[int]:
    text = prompt_for(model.template, request, settings.llm, model.context, calls_ruled_out=True)
    return list(model.llm.tokenize(text.encode(), add_bos=False, special=True))


def _writer_holds(model: LoadedLlama) -> int:
    assert model.call_writer is not None
    return int(model.call_writer.pool.contexts[0].n_tokens)


def test_the_writer_reads_the_tools_ahead_and_writes_the_call_with_its_iana_names(writing: Any,
                                                                                    make_handler: Any) -> None:
    settings, model = writing
    handler = make_handler(LlamaCppLM, model, settings)
    request = _request(ChatMessage("user", "What time is it in Chicago when it is 7:15 in Madrid?"))
    list(handler.process(PromptPrefill(request)))
    assert model.call_writer is not None and model.call_writer.reader.wait_caught_up()  # in idle time, busy or not
    read = _writer_holds(model)
    assert read > 200  # the system prompt and the tools, at least
    parts = list(handler.process(request))
    calls = [p for p in parts if isinstance(p, AssistantToolCallPart)]
    assert [call.name for call in calls] == ["convert_time"], parts
    assert json.loads(calls[0].arguments) == {"source_timezone": "Europe/Madrid", "time": "07:15",
                                              "target_timezone": "America/Chicago"}
    assert _writer_holds(model) > read  # the writer's context wrote it, on from what it had read


def test_a_writer_that_has_not_read_the_tools_leaves_the_call_to_the_main_model_and_reads_them_after(
        writing: Any, make_handler: Any, caplog: pytest.LogCaptureFixture) -> None:
    settings, model = writing
    model.call_writer.pool.contexts[0].reset()  # as after a start: nothing read yet
    handler = make_handler(LlamaCppLM, model, settings)
    request = _request(ChatMessage("user", "What's the time in Lisbon right now?"))
    with caplog.at_level(logging.INFO, logger="speech_to_speech.llm.call_writer"):
        parts = list(handler.process(request))
    assert [p.name for p in parts if isinstance(p, AssistantToolCallPart)] == ["get_current_time"], parts
    assert "holds 0 of the prompt's" in caplog.text and "the main model writes the call" in caplog.text
    # No read ahead asked for it (no prefill): the writer reads the prompt of the call it missed, once idle.
    assert model.call_writer.reader.wait_caught_up()
    with ExitStack() as next_call:
        assert model.call_writer.ready_context(_prompt_tokens(model, settings, request), next_call) is not None


def test_the_answer_to_a_result_is_the_main_model_s_words(writing: Any, make_handler: Any) -> None:
    settings, model = writing
    handler = make_handler(LlamaCppLM, model, settings)
    question = ChatMessage("user", "What's the time in Lisbon right now?")
    call = {"call_id": "call_1", "name": "get_current_time", "arguments": '{"timezone": "Europe/Lisbon"}'}
    result = json.dumps({"timezone": "Europe/Lisbon", "datetime": "2026-12-06T09:41:00+00:00"})
    held = _writer_holds(model)
    answer = list(handler.process(_request(question, ChatMessage("assistant", "", (call,)),
                                           ChatMessage("tool", result, tool_call_id="call_1"))))
    said = "".join(p.text for p in answer if isinstance(p, AssistantTextPart))
    assert not [p for p in answer if isinstance(p, AssistantToolCallPart)] and ("9:41" in said or "nine" in said), said
    assert _writer_holds(model) == held  # the writer took no part in it


def test_a_writer_with_another_tokenizer_is_refused() -> None:
    pytest.importorskip("llama_cpp", reason="the quality preset runs on llama.cpp (the llama-cpp extra)")
    settings = _settings(llm_tool_call_model=str(packaged_gguf()))  # SmolLM2: another vocabulary
    with pytest.raises(RuntimeError, match="another tokenizer"):
        load_llama_cpp(*loading("llm", settings))
