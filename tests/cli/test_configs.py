"""Every preset under configs/ is a valid settings file for the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from speech_to_speech import cli
from speech_to_speech.config import ServerSettings

PRESETS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))


def test_the_presets_exist() -> None:
    assert {p.name for p in PRESETS} >= {"default.yaml", "remote-openai.yaml"}


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_a_preset_loads_through_the_cli(preset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from speech_to_speech.realtime.app import server

    served: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", served.append)
    assert cli.main(["serve", "--config", str(preset)]) == 0
    assert served[0].server.port == 8765


def test_the_default_preset_is_the_built_in_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from speech_to_speech.realtime.app import server

    served: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", served.append)
    cli.main(["serve", "--config", str(PRESETS[0].parent / "default.yaml")])
    assert served == [ServerSettings()]


@pytest.mark.parametrize("name", ["fast", "quality", "accurate", "multilingual"])
def test_a_named_preset_and_its_yaml_file_give_the_same_settings(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from speech_to_speech.realtime.app import server

    served: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", served.append)
    cli.main(["serve", "--preset", name])
    cli.main(["serve", "--config", str(PRESETS[0].parent / f"{name}.yaml")])
    assert served[0] == served[1]
    assert served[0] != ServerSettings()


def test_flags_override_the_config_file_which_overrides_the_preset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from speech_to_speech.realtime.app import server

    served: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", served.append)
    config = tmp_path / "mine.yaml"
    config.write_text("server:\n  max_new_tokens: 40\n  temperature: 0.3\n")
    cli.main(["serve", "--preset", "quality", "--config", str(config), "--temperature", "0.5"])
    settings = served[0]
    llm = settings.llm
    assert (llm.model, llm.max_new_tokens, llm.temperature) == ("qwen2.5-coder-0.5b", 40, 0.5)
