"""Fixtures for the packaged client tests: scripted servers on free loopback ports."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from client_harness import SCRIPTED

from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages import GenerateResponseRequest
from speech_to_speech.testing.scripted import ScriptedLLM
from speech_to_speech.testing.server import RunningServer, running_server

ServerFactory = Callable[..., RunningServer]


@pytest.fixture
def make_server() -> Iterator[ServerFactory]:
    """Start scripted servers (setting overrides as keywords); stopped after the test."""
    with ExitStack() as stack:
        yield lambda **overrides: stack.enter_context(running_server(ServerSettings(**{**SCRIPTED, **overrides})))


@pytest.fixture
def llm_requests(monkeypatch: pytest.MonkeyPatch) -> list[GenerateResponseRequest]:
    """Every request the scripted LLM of a server started in this test receives (what the model was asked)."""
    seen: list[GenerateResponseRequest] = []
    lock = threading.Lock()
    original = ScriptedLLM.generate

    def generate(self: ScriptedLLM, request: GenerateResponseRequest) -> Any:
        with lock:
            seen.append(request)
        return original(self, request)

    monkeypatch.setattr(ScriptedLLM, "generate", generate)
    return seen
