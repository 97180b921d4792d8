"""One handle per assistant response: its audio, transcript and end, demultiplexed from the event stream.

``RealtimeClient.responses()`` yields them. A handle keeps all of its
response's audio, so ``audio()`` can start late and still hear it from the
first sample; the client keeps only the last few handles nobody took, so a
program that never asks for them does not grow.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable

from speech_to_speech.client.errors import WaitTimeout
from speech_to_speech.client.events import BYTES_PER_SAMPLE, RealtimeEvent, ResponseDone
from speech_to_speech.client.streams import Fanout, Subscription


class ResponseHandle:
    """One assistant response, filled in as its events arrive."""

    def __init__(self, created: RealtimeEvent, rate: int) -> None:
        self.response_id = created.response_id or ""
        self.created_event = created
        self.done_event: ResponseDone | None = None
        self.transcript = ""  # what the assistant said (audio transcript)
        self.text = ""  # a text-only answer
        self.played_ms = 0.0  # audio handed out by audio(), in ms: what a caller that plays it has played
        self.rate = rate
        self._chunks: list[bytes] = []
        self._error: BaseException | None = None
        self._wake = asyncio.Event()

    @property
    def finished(self) -> bool:
        return self.done_event is not None

    @property
    def status(self) -> str | None:
        return self.done_event.status if self.done_event is not None else None

    @property
    def audio_bytes(self) -> bytes:
        """Every audio byte received so far."""
        return b"".join(self._chunks)

    @property
    def audio_ms(self) -> float:
        return sum(len(chunk) for chunk in self._chunks) / BYTES_PER_SAMPLE / self.rate * 1000.0

    async def audio(self) -> AsyncIterator[bytes]:
        """The response's PCM16 audio from its first chunk, live until the response is done."""
        index = 0
        while True:
            while index < len(self._chunks):
                chunk = self._chunks[index]
                index += 1
                self.played_ms += len(chunk) / BYTES_PER_SAMPLE / self.rate * 1000.0
                yield chunk
            if self.finished:
                return
            if self._error is not None:
                raise self._error
            await self._changed()

    async def wait(self, timeout_s: float | None = None) -> ResponseDone:
        """The ``response.done`` event (raises the connection's error if it ends first)."""
        try:
            async with asyncio.timeout(timeout_s):
                while self.done_event is None:
                    if self._error is not None:
                        raise self._error
                    await self._changed()
        except TimeoutError:
            raise WaitTimeout(f"response {self.response_id} not done within {timeout_s:g}s") from None
        return self.done_event

    async def _changed(self) -> None:
        self._wake.clear()
        await self._wake.wait()

    def _feed(self, event: RealtimeEvent) -> None:
        kind = event.type
        if kind == "response.output_audio.delta":
            self._chunks.append(event.audio)
        elif kind == "response.output_audio_transcript.delta":
            self.transcript += event.text or ""
        elif kind == "response.output_text.delta":
            self.text += event.text or ""
        elif kind == "response.done" and isinstance(event, ResponseDone):
            self.done_event = event
        else:
            return
        self._wake.set()

    def _fail(self, error: BaseException) -> None:
        if self._error is None and not self.finished:
            self._error = error
            self._wake.set()

    def __repr__(self) -> str:
        return f"<ResponseHandle {self.response_id} {self.status or 'in progress'} {self.audio_ms:.0f} ms>"


class ResponseTracker:
    """Sorts events into handles; new handles go to every ``responses()`` reader (or wait for the next one)."""

    def __init__(self, rate: Callable[[], int], keep: int = 16) -> None:
        self._rate = rate
        self._active: dict[str, ResponseHandle] = {}
        self._unclaimed: deque[ResponseHandle] = deque(maxlen=keep)
        self._fanout: Fanout[ResponseHandle] = Fanout()

    def subscribe(self) -> Subscription[ResponseHandle]:
        """Handles nobody took yet, then every new one."""
        subscription = self._fanout.subscribe(self._unclaimed)
        self._unclaimed.clear()
        return subscription

    def handle(self, event: RealtimeEvent) -> None:
        response_id = event.response_id
        if response_id is None:
            return
        if event.type == "response.created" and response_id not in self._active:
            created = ResponseHandle(event, self._rate())
            self._active[response_id] = created
            if self._fanout.has_subscribers:
                self._fanout.publish(created)
            else:
                self._unclaimed.append(created)
            return
        handle = self._active.get(response_id)
        if handle is not None:
            handle._feed(event)
            if handle.finished:
                del self._active[response_id]

    def end(self, error: BaseException | None, unfinished: BaseException) -> None:
        """The session is over: readers stop (with ``error``, if any); unfinished handles fail with ``unfinished``."""
        for handle in self._active.values():
            handle._fail(unfinished)
        self._active.clear()
        self._fanout.end(error)
