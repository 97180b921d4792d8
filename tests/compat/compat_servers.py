"""Scripted servers the stock-client tests talk to (fresh per test, so scripts start at their first entry)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from speech_to_speech.config import ServerSettings
from speech_to_speech.testing.server import RunningServer, running_server


@contextmanager
def scripted(transcripts: list[str], replies: list[str], token_delay_ms: float,
             **overrides: Any) -> Iterator[RunningServer]:
    """A fresh server (so the scripts start from their first entry) with scripted backends."""
    settings = ServerSettings(vad="scripted", stt="scripted", llm="scripted", tts="scripted",
                              scripted_transcripts=transcripts, scripted_replies=replies,
                              scripted_token_delay_ms=token_delay_ms, **overrides)
    with running_server(settings) as server:
        yield server


# A long answer to talk over: at 30 ms per token it stays in progress for about two seconds.
STORY = " ".join(
    f"Chapter {n}: the little robot walked along the shore, counting the waves." for n in range(1, 5)
)


def serving_story(story: str, *replies: str) -> AbstractContextManager[RunningServer]:
    """The barge-in conversation: "Tell me a story." gets ``story``; "Stop, please." and after get ``replies``."""
    return scripted(["Tell me a story.", "Stop, please."], [story, *replies], token_delay_ms=30.0)
