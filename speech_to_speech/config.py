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

# The sections and their helpers, under the names users import them by (``from speech_to_speech.config import
# ServerSettings``): the settings package's own list, not a copy of it.
from speech_to_speech.settings import *  # noqa: F403
from speech_to_speech.settings import __all__ as _SETTINGS_NAMES

__all__ = [*_SETTINGS_NAMES, "load_yaml", "settings_from_yaml"]


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
