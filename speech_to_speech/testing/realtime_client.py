"""A small async OpenAI Realtime client over a raw WebSocket, for tests and benches.

It sends client events (each with an ``event_id``), streams audio in any wire
format at a chosen pace, and reads server events in the background into an
ordered log. Every server event is checked as it arrives: standard events
against the ``openai`` package's GA schema (``RealtimeServerEvent``), our
``speech_to_speech.*`` extension events for a string ``event_id``; no
``event_id`` may repeat. A violation fails the next read, and the close of
the client (the schema: ``server_event_schema.py``).

Every wait has a timeout; a wait that times out says what it did see. What
a wait looks for is ``event_matchers.py``; the audio tests send, and its wire
formats, ``client_audio.py``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy.typing as npt
import websockets
from websockets.asyncio.client import ClientConnection

from speech_to_speech.protocol import Event
from speech_to_speech.testing.client_audio import encode_audio
from speech_to_speech.testing.event_matchers import Match, is_error_for, matcher, types
from speech_to_speech.testing.server_event_schema import ProtocolViolation, validate_server_event

DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class Received:
    event: Event
    at: float  # time.monotonic() when it was read


class ServerClosed(AssertionError):
    """The connection closed while a wait was still looking for an event."""


class RealtimeTestClient:
    """One Realtime connection. Use :meth:`connect` (an async context manager)."""

    def __init__(self, websocket: ClientConnection, *, validate: bool = True,
                 allowed_extra: Iterable[str] = (), extension_view: Callable[[Event], Event] | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.websocket = websocket
        self.validate = validate
        # Maps a documented extension value (a 16 kHz input rate, effort "none") to
        # what the GA schema knows, for validation only; the log keeps the original.
        self.extension_view = extension_view
        self.allowed_extra = frozenset(allowed_extra)
        self.timeout = timeout
        self.received: list[Received] = []  # every server event, in arrival order
        self.sent: list[Event] = []
        self.violations: list[ProtocolViolation] = []
        self._pending: asyncio.Queue[Event | None] = asyncio.Queue()
        self._ids = itertools.count(1)
        self._closed = asyncio.Event()
        self._event_ids: set[Any] = set()
        self._reader = asyncio.create_task(self._read(), name="realtime-test-client-reader")

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, url: str, *, timeout: float = DEFAULT_TIMEOUT, validate: bool = True,
                      allowed_extra: Iterable[str] = (), extension_view: Callable[[Event], Event] | None = None,
                      **connect_kwargs: Any) -> AsyncIterator[RealtimeTestClient]:
        """``connect_kwargs`` go to ``websockets.connect`` (``additional_headers``, ``subprotocols``, ``origin``)."""
        websocket = await asyncio.wait_for(
            websockets.connect(url, max_size=None, open_timeout=timeout, **connect_kwargs), timeout)
        client = cls(websocket, validate=validate, allowed_extra=allowed_extra, extension_view=extension_view,
                     timeout=timeout)
        try:
            yield client
        finally:
            await client.close()
        client.raise_violations()

    # ------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.websocket.close(), self.timeout)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    def abort(self) -> None:
        """Drop the TCP connection without a closing handshake (a crashed client)."""
        transport = self.websocket.transport
        if transport is not None:
            transport.abort()

    @property
    def close_code(self) -> int | None:
        return self.websocket.close_code

    async def wait_closed(self, timeout: float | None = None) -> int | None:
        await asyncio.wait_for(self._closed.wait(), timeout or self.timeout)
        return self.close_code

    def raise_violations(self) -> None:
        if self.violations:
            raise self.violations[0]

    async def _read(self) -> None:
        try:
            async for message in self.websocket:
                try:
                    event = json.loads(message)
                except ValueError:
                    self.violations.append(ProtocolViolation(f"a server frame is not JSON: {message!r:.200}"))
                    continue
                if self.validate:
                    event_id = event.get("event_id") if isinstance(event, dict) else None
                    if event_id in self._event_ids:
                        self.violations.append(ProtocolViolation(f"event_id {event_id!r} sent twice"))
                    self._event_ids.add(event_id)
                    try:
                        view = self.extension_view(copy.deepcopy(event)) if self.extension_view else event
                        validate_server_event(view, self.allowed_extra)
                    except ProtocolViolation as violation:
                        self.violations.append(violation)
                self.received.append(Received(event, time.monotonic()))
                self._pending.put_nowait(event)
        except websockets.ConnectionClosed:
            pass
        finally:
            self._closed.set()
            self._pending.put_nowait(None)

    # ------------------------------------------------------------ sending

    def next_event_id(self) -> str:
        return f"evt_client_{next(self._ids)}"

    async def send(self, event_type: str, **fields: Any) -> str:
        """Send ``{"type": event_type, **fields}`` with a fresh event_id; returns the id."""
        return await self.send_event({"type": event_type, **fields})

    async def send_event(self, event: Event) -> str:
        event = dict(event)
        event.setdefault("event_id", self.next_event_id())
        self.sent.append(event)
        await self.websocket.send(json.dumps(event))
        return str(event["event_id"])

    async def send_raw(self, message: str | bytes) -> None:
        await self.websocket.send(message)

    async def update_session(self, session: Event, timeout: float | None = None) -> Event:
        """``session.update`` and its ``session.updated`` (an ``error`` for it fails)."""
        event_id = await self.send("session.update", session={"type": "realtime", **session})
        rejected = is_error_for(event_id)
        reply = await self.wait_for(lambda e: e.get("type") == "session.updated" or rejected(e), timeout)
        if reply["type"] == "error":
            raise AssertionError(f"session.update was rejected: {reply['error']}")
        return reply

    async def append_audio(self, samples: npt.NDArray[Any], rate: int, *, fmt: str = "audio/pcm",
                           chunk_ms: int = 100, pace: float | None = None) -> None:
        """Stream ``samples`` (at ``rate``) as ``input_audio_buffer.append`` events.

        ``pace`` None sends as fast as the socket takes it; 1.0 is real time,
        2.0 twice as fast.
        """
        step = max(1, rate * chunk_ms // 1000)
        for start in range(0, len(samples), step):
            payload = base64.b64encode(encode_audio(samples[start : start + step], fmt)).decode("ascii")
            await self.send("input_audio_buffer.append", audio=payload)
            await asyncio.sleep(chunk_ms / 1000 / pace if pace else 0)

    # ------------------------------------------------------------ receiving

    async def recv(self, timeout: float | None = None) -> Event:
        """The next server event not yet returned by a read."""
        self.raise_violations()
        try:
            event = await asyncio.wait_for(self._pending.get(), timeout or self.timeout)
        except TimeoutError:
            raise TimeoutError(f"no server event within {timeout or self.timeout}s") from None
        if event is None:
            self._pending.put_nowait(None)  # stay closed for later reads
            raise ServerClosed(f"the server closed the connection (code {self.close_code})")
        self.raise_violations()
        return event

    async def collect_until(self, match: Match, timeout: float | None = None) -> list[Event]:
        """Events read until (and including) the first that matches, all within ``timeout``."""
        predicate = matcher(match)
        limit = timeout or self.timeout
        deadline = time.monotonic() + limit
        seen: list[Event] = []
        while True:
            remaining = deadline - time.monotonic()
            try:
                event = await self.recv(max(remaining, 0.001))
            except TimeoutError:
                raise TimeoutError(f"no matching event within {limit}s; saw {types(seen)}") from None
            except ServerClosed as closed:
                raise ServerClosed(f"{closed}; saw {types(seen)}") from None
            seen.append(event)
            if predicate(event):
                return seen

    async def wait_for(self, match: Match, timeout: float | None = None) -> Event:
        """The first event (from here on) that matches; earlier ones are skipped."""
        return (await self.collect_until(match, timeout))[-1]

    async def barrier(self, timeout: float | None = None) -> list[Event]:
        """Events read until the server answered a no-op ``session.update``.

        The server handles client events in order and emits everything caused
        by an event it already sent before answering the next, so whatever an
        earlier event would trigger has arrived once this returns.
        """
        await self.send("session.update", session={"type": "realtime"})
        events = await self.collect_until("session.updated", timeout)
        return events[:-1]

    async def response_cycle(self, timeout: float | None = None) -> list[Event]:
        """Events until the next ``response.done``."""
        return await self.collect_until("response.done", timeout)

    async def hear_out(self, bytes_per_s: int = 48000) -> None:
        """Wait as a user does before speaking again: until a client playing each audio delta as it arrives,
        after the ones before, has played all it was sent (``bytes_per_s``: the output format's, 24 kHz PCM16
        by default). The server judges speech while that audio still plays as speech over the answer."""
        quiet_at = played_out_at((r.at, len(base64.b64decode(r.event["delta"])) / bytes_per_s)
                                 for r in self.received if r.event["type"] == "response.output_audio.delta")
        await asyncio.sleep(max(0.0, quiet_at - time.monotonic()))


def played_out_at(chunks: Iterable[tuple[float, float]]) -> float:
    """When a client that plays each chunk of audio (``(read at, seconds long)``, monotonic) as it arrives,
    after the ones before it, has played them all; 0.0 for none."""
    quiet_at = 0.0
    for at, seconds in chunks:
        quiet_at = max(quiet_at, at) + seconds
    return quiet_at
