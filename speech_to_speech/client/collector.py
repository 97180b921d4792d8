"""EventCollector: keeps a client's events (with arrival times) for assertions and latency figures.

```python
collector = EventCollector()
consuming = asyncio.create_task(collector.consume(client))   # subscribed at this call
asked_at = time.monotonic()
await client.commit(create_response=True)
...
print(collector.timing_summary(after_s=asked_at))
```

It reports what a client observes and nothing it would have to derive: time
to the first text and first audio after a moment, and the cadence of audio
deltas (the mean and largest gap between consecutive ones), which is what a
listener hears as smooth or choppy playback.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from speech_to_speech.client.events import ErrorEvent, RealtimeEvent

if TYPE_CHECKING:
    from speech_to_speech.client.realtime_client import RealtimeClient

AUDIO_DELTA = "response.output_audio.delta"
TEXT_DELTAS = frozenset({"response.output_audio_transcript.delta", "response.output_text.delta"})


@dataclass(frozen=True)
class TimingSummary:
    """Client-observed timings in ms, from ``after_s`` (a ``time.monotonic()``) or the first event kept.

    None where nothing of that kind arrived. Gaps need two audio deltas.
    """

    first_text_ms: float | None
    first_audio_ms: float | None
    audio_deltas: int
    audio_bytes: int
    audio_gap_mean_ms: float | None
    audio_gap_max_ms: float | None


class EventCollector:
    """Every event handed to it, in arrival order; ``consume(client)`` hands it a client's stream."""

    def __init__(self, events: Iterable[RealtimeEvent] = ()) -> None:
        self.events: list[RealtimeEvent] = list(events)

    def consume(self, client: RealtimeClient) -> Coroutine[Any, Any, None]:
        """Subscribe to ``client`` now; the returned coroutine collects until the session ends."""
        subscription = client.events()

        async def collect() -> None:
            async for event in subscription:
                self.add(event)

        return collect()

    def add(self, event: RealtimeEvent) -> None:
        self.events.append(event)

    def of_type(self, kind: str) -> list[RealtimeEvent]:
        return [event for event in self.events if event.type == kind]

    def count(self, kind: str) -> int:
        return sum(1 for event in self.events if event.type == kind)

    def errors(self) -> list[ErrorEvent]:
        return [event for event in self.events if isinstance(event, ErrorEvent)]

    def audio_bytes(self, response_id: str | None = None) -> bytes:
        """The decoded audio of ``response_id`` (of every response when None), in arrival order."""
        return b"".join(event.audio for event in self.events
                        if event.type == AUDIO_DELTA and (response_id is None or event.response_id == response_id))

    def first_received_at(self, kind: str, after_s: float | None = None) -> float | None:
        """``time.monotonic()`` at which the first ``kind`` event (after ``after_s``) arrived."""
        for event in self.events:
            if event.type == kind and (after_s is None or event.received_at >= after_s):
                return event.received_at
        return None

    def timing_summary(self, after_s: float | None = None) -> TimingSummary:
        kept = [event for event in self.events if after_s is None or event.received_at >= after_s]
        start = after_s if after_s is not None else (kept[0].received_at if kept else 0.0)
        texts = [event.received_at for event in kept if event.type in TEXT_DELTAS]
        audio = [event for event in kept if event.type == AUDIO_DELTA]
        gaps = [(later.received_at - earlier.received_at) * 1000.0 for earlier, later in pairwise(audio)]
        return TimingSummary(
            first_text_ms=(texts[0] - start) * 1000.0 if texts else None,
            first_audio_ms=(audio[0].received_at - start) * 1000.0 if audio else None,
            audio_deltas=len(audio),
            audio_bytes=sum(len(event.audio) for event in audio),
            audio_gap_mean_ms=sum(gaps) / len(gaps) if gaps else None,
            audio_gap_max_ms=max(gaps) if gaps else None,
        )
