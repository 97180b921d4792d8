"""Server settings: every flag of `serve`/`local`, loadable from YAML.

The settings live in sections (``speech_to_speech/settings/``: server, limits,
vad, turns, stt, llm, tts, testing); the CLI derives a ``--name`` flag from
each field, named by its flat name, so a setting is declared once. YAML
presets under ``configs/`` hold the same flat keys (at the top level or under
``server:``). This module is the entry point: it re-exports the sections.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from speech_to_speech.settings import (
    FLAT_FIELDS,
    SECRET_FIELDS,
    SECTIONS,
    TEST_ONLY_FIELDS,
    Device,
    GGUFWeightType,
    LimitsSettings,
    LLMBackendName,
    LLMSettings,
    LoadContext,
    PipelineCount,
    ServerSettings,
    ServingSettings,
    STTSettings,
    TestingSettings,
    TTSSettings,
    TurnSettings,
    VADSettings,
    flat_location,
    flat_settings,
    settings_from_flat,
)

__all__ = [
    "FLAT_FIELDS",
    "SECRET_FIELDS",
    "SECTIONS",
    "TEST_ONLY_FIELDS",
    "Device",
    "GGUFWeightType",
    "LLMBackendName",
    "LLMSettings",
    "LimitsSettings",
    "LoadContext",
    "PipelineCount",
    "STTSettings",
    "ServerSettings",
    "ServingSettings",
    "TTSSettings",
    "TestingSettings",
    "TurnSettings",
    "VADSettings",
    "flat_location",
    "flat_settings",
    "load_yaml",
    "settings_from_flat",
    "settings_from_yaml",
]


def load_yaml(path: str | Path) -> dict[str, Any]:
    data = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return data


def settings_from_yaml(data: dict[str, Any]) -> dict[str, Any]:
    """The server section of a config file: ``server:`` if present, else the top level."""
    section = data.get("server", data)
    if not isinstance(section, dict):
        raise ValueError("'server' must be a mapping")
    return {k: v for k, v in section.items() if k not in ("runtime", "client")}
