"""OpenAI-compatible clients for the remote STT/TTS backends.

Self-hosted servers (vLLM, speaches, …) usually ignore the key, but the SDK
refuses to start without one: with a base URL and no key we send a dummy.
"""

from __future__ import annotations

import os
from typing import Any

DUMMY_KEY = "not-needed"


def api_key(explicit: str | None, base_url: str | None) -> str:
    key = explicit or os.environ.get("OPENAI_API_KEY")
    if key:
        return key
    if base_url:
        return DUMMY_KEY
    raise RuntimeError(
        "no API key: pass the backend's --*_api_key, set OPENAI_API_KEY, or give a --*_base_url"
    )


def make_client(base_url: str | None, explicit_key: str | None, timeout_s: float = 30.0) -> Any:
    """A synchronous ``openai.OpenAI``; thread-safe, so one is shared by every unit."""
    from openai import OpenAI

    return OpenAI(
        base_url=base_url, api_key=api_key(explicit_key, base_url), timeout=timeout_s, max_retries=1
    )
