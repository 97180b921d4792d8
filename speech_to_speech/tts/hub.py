"""Voice files from the model hub, for users with a network (``--tts_hub_voices``).

``huggingface_hub`` fetches them once into its cache (``HF_HOME``) and reads
the cache afterwards; ``HF_ENDPOINT`` points it at another hub or a mirror,
``HF_HUB_OFFLINE=1`` keeps it to the cache. Every way a fetch can fail
(no network, no such file, a refused request) comes out as
:class:`HubUnavailable`, so a caller falls back to an offline voice.
"""

from __future__ import annotations

import os
from pathlib import Path


class HubUnavailable(RuntimeError):
    """The file could not be had from the hub or its cache."""


def fetch(repo_id: str, filename: str) -> Path:
    """The local path of ``filename`` in hub repository ``repo_id``, fetched on first use."""
    import httpx
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        # The endpoint as the environment says now (huggingface_hub reads its own copy once, at import).
        return Path(hf_hub_download(repo_id, filename, endpoint=os.environ.get("HF_ENDPOINT") or None))
    except (OSError, ValueError, EntryNotFoundError, httpx.HTTPError) as error:
        raise HubUnavailable(f"{repo_id}/{filename}: {error}") from error
