"""Where converted models are kept between runs.

``$SPEECH_TO_SPEECH_CACHE`` if set, else ``~/.cache/speech-to-speech``
(``$XDG_CACHE_HOME`` respected); models go under ``models/<name>``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


def cache_root() -> Path:
    explicit = os.environ.get("SPEECH_TO_SPEECH_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "speech-to-speech"


def model_cache_dir(name: str) -> Path:
    return cache_root() / "models" / name


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def package_file(package: str, inner: str) -> Path | None:
    """The file ``inner`` inside installed package ``package`` (found without importing it), or None."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / inner
        if path.is_file():
            return path
    return None


def cached_conversion(name: str, marker: str, convert: Callable[[Path], None]) -> Path:
    """The cache folder ``name``, made by ``convert(folder)`` the first time.

    ``marker`` is a file that exists once the folder is complete. The conversion
    writes into a staging folder that is renamed into place, so a crash never
    leaves a half-written cache and two processes converting at once both end
    with the same complete folder.
    """
    target = model_cache_dir(name)
    if (target / marker).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        convert(staging)
        os.replace(staging, target)
    except OSError:
        if not (target / marker).exists():
            raise
        log.debug("another process wrote %s first", target)  # it won the rename
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
