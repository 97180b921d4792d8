"""A backend from outside the package, chosen by ``module:Class`` or by an entry point's name, serves a session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from speech_to_speech import cli, registry
from speech_to_speech.config import ServerSettings
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import FAST_SCRIPTED
from speech_to_speech.testing.server import running_server
from speech_to_speech.units.builder import PipelineFactory

# A third party's LLM backend, written only against the package's public pieces.
ECHO_BACKEND = '''
from speech_to_speech import registry
from speech_to_speech.llm.base import LLMHandler


def load(settings):
    return "You said:"


@registry.register("llm", "echo", load)
class EchoLLM(LLMHandler):
    def generate(self, request):
        heard = next(m.content for m in reversed(request.messages) if m.role == "user")
        yield self.model
        for word in heard.split():
            yield " " + word
'''


# A handler registered for a stage whose base class it does not subclass: a TTS offered as the LLM.
WRONG_BASE_BACKEND = '''
from speech_to_speech import registry
from speech_to_speech.tts.base import TTSHandler


@registry.register("llm", "a-voice", lambda settings: None)
class AVoice(TTSHandler):
    pass
'''


@pytest.fixture
def echo_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "echo_backend.py").write_text(ECHO_BACKEND)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path


@pytest.fixture
def echo_package(echo_module: Path) -> Path:
    """An installed distribution that declares the backend as an entry point (what pip leaves on sys.path)."""
    info = echo_module / "echo_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\nllm.echo = echo_backend\n")
    return echo_module


async def _answer_to(llm: str, words: str) -> str:
    settings = ServerSettings(**{**FAST_SCRIPTED, "llm": llm})
    with running_server(settings) as server:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.send("conversation.item.create", item={
                "type": "message", "role": "user", "content": [{"type": "input_text", "text": words}]})
            await client.send("response.create")
            done = await client.wait_for("response.output_audio_transcript.done")
            return str(done["transcript"])


async def test_a_backend_chosen_by_its_module_and_class_answers(echo_module: Path) -> None:
    assert await _answer_to("echo_backend:EchoLLM", "hello there") == "You said: hello there"


async def test_a_backend_declared_as_an_entry_point_is_listed_and_answers(echo_package: Path) -> None:
    assert "echo" in registry.names("llm")
    parser, fields = cli.build_parser()
    settings = cli.settings_from_args(parser.parse_args(["serve", "--llm", "echo"]), fields)
    assert settings.llm.backend == "echo"
    assert await _answer_to("echo", "good morning") == "You said: good morning"


def test_an_unknown_name_is_refused_at_the_command_line_with_the_choices() -> None:
    parser, fields = cli.build_parser()
    with pytest.raises(ValueError, match=r"unknown llm backend 'echo'; choose one of .*llama-cpp.*module:Class"):
        cli.settings_from_args(parser.parse_args(["serve", "--llm", "echo"]), fields)


def test_a_path_to_a_class_that_is_not_registered_says_how_to_register_it(echo_module: Path) -> None:
    (echo_module / "plain_module.py").write_text("class NotABackend:\n    pass\n")
    with pytest.raises(ValueError, match=r"not a registered llm backend: decorate the class with"):
        registry.get("llm", "plain_module:NotABackend")
    with pytest.raises(ValueError, match=r"llm backend 'plain_module:Missing'"):
        registry.get("llm", "plain_module:Missing")


def test_a_handler_that_does_not_subclass_its_stage_base_stops_startup(echo_module: Path) -> None:
    (echo_module / "wrong_base.py").write_text(WRONG_BASE_BACKEND)
    settings = ServerSettings(**{**FAST_SCRIPTED, "llm": "wrong_base:AVoice"})
    with pytest.raises(TypeError, match=r"^llm backend 'a-voice': AVoice does not subclass LLMHandler$"):
        PipelineFactory(settings)
