"""Fixtures for the packaged client tests: scripted servers on free loopback ports."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.testing.scripted import recorded_requests
from speech_to_speech.testing.server import RunningServer, running_server

from .client_harness import SCRIPTED

ServerFactory = Callable[..., RunningServer]


@pytest.fixture
def make_server() -> Iterator[ServerFactory]:
    """Start scripted servers (setting overrides as keywords); stopped after the test."""
    with ExitStack() as stack:
        yield lambda **overrides: stack.enter_context(running_server(ServerSettings(**{**SCRIPTED, **overrides})))


@pytest.fixture
def llm_requests() -> Iterator[list[GenerateResponseRequest]]:
    """Every request the scripted LLM receives (what the model was asked), in order."""
    with recorded_requests() as seen:
        yield seen
