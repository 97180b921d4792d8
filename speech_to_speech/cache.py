"""Where converted models are kept between runs.

``$SPEECH_TO_SPEECH_CACHE`` if set, else ``~/.cache/speech-to-speech``
(``$XDG_CACHE_HOME`` respected); models go under ``models/<name>``.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    explicit = os.environ.get("SPEECH_TO_SPEECH_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "speech-to-speech"


def model_cache_dir(name: str) -> Path:
    return cache_root() / "models" / name
