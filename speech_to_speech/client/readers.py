"""What a RealtimeClient's readers see: every server event, a handle per response, and how the session ended.

The end is decided once (the server ended the session, the connection was
lost for good, or the program closed it); from then on every reader stops
and every wait raises that reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection

from speech_to_speech.client.errors import ProtocolError, RealtimeClientError, SessionClosed, WaitTimeout
from speech_to_speech.client.events import ErrorEvent, RealtimeEvent
from speech_to_speech.client.responses import ResponseHandle, ResponseTracker
from speech_to_speech.client.streams import Fanout, Subscription

# What a wait makes of an error event: the exception to raise, or None to keep waiting.
Refusal = Callable[[ErrorEvent], ProtocolError | None]


class Readers:
    def __init__(self, output_rate: Callable[[], int], keep_responses: int) -> None:
        self._events: Fanout[RealtimeEvent] = Fanout()
        self._responses = ResponseTracker(output_rate, keep_responses)
        self.ended: RealtimeClientError | None = None  # what waits raise once the session is over

    def events(self) -> Subscription[RealtimeEvent]:
        return self._events.subscribe()

    def responses(self) -> Subscription[ResponseHandle]:
        return self._responses.subscribe()

    def publish(self, event: RealtimeEvent) -> None:
        self._responses.handle(event)
        self._events.publish(event)

    def end(self, reason: RealtimeClientError, stream_error: RealtimeClientError | None) -> bool:
        """End every reader (raising ``stream_error`` if given); False if the session had already ended."""
        if self.ended is not None:
            return False
        self.ended = reason
        self._events.end(stream_error)
        self._responses.end(stream_error, reason)
        return True

    async def next_of(self, subscription: Subscription[RealtimeEvent], types: Collection[str], refusal: Refusal,
                      timeout_s: float | None, *, waited_for: str, after: str = "") -> RealtimeEvent:
        """The next event of ``types`` on ``subscription``, which this closes.

        An error event that ``refusal`` turns into an exception raises it; WaitTimeout says
        "no {waited_for} within {timeout_s}s{after}".
        """
        try:
            async with asyncio.timeout(timeout_s):
                async for event in subscription:
                    if event.type in types:
                        return event
                    error = refusal(event) if isinstance(event, ErrorEvent) else None
                    if error is not None:
                        raise error
        except TimeoutError as error:
            if isinstance(error, RealtimeClientError):
                raise
            raise WaitTimeout(f"no {waited_for} within {timeout_s:g}s{after}") from None
        finally:
            subscription.close()
        raise self.ended or SessionClosed("the session ended")
