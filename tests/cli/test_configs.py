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
    from speech_to_speech.realtime import server

    served: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", served.append)
    assert cli.main(["serve", "--config", str(preset)]) == 0
    assert served[0].port == 8765


def test_the_default_preset_is_the_built_in_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from speech_to_speech.realtime import server

    served: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", served.append)
    cli.main(["serve", "--config", str(PRESETS[0].parent / "default.yaml")])
    assert served == [ServerSettings()]
