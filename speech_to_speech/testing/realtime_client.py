"""A small async OpenAI Realtime client over a raw WebSocket, for tests and benches.

It sends client events (each with an ``event_id``), streams audio in any wire
format at a chosen pace, and reads server events in the background into an
ordered log. Every server event is checked as it arrives: standard events
against the ``openai`` package's GA schema (``RealtimeServerEvent``), our
``speech_to_speech.*`` extension events for a string ``event_id``; no
``event_id`` may repeat. A violation fails the next read, and the close of
the client.

Every wait has a timeout; a wait that times out says what it did see.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import functools
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, get_args

import numpy as np
import numpy.typing as npt
import pydantic
import websockets
from openai.types.realtime import RealtimeServerEvent
from websockets.asyncio.client import ClientConnection

from speech_to_speech.protocol import Event

Match = str | Callable[[Event], bool]

EXTENSION_PREFIX = "speech_to_speech."
DEFAULT_TIMEOUT = 10.0

_SERVER_EVENT = pydantic.TypeAdapter(RealtimeServerEvent)

# Fields outside the GA schema that a server may still send: OpenAI's own server
# sends the session's id and object, and ``extensions`` is our documented opt-in.
KNOWN_EXTRA = frozenset(
    f"{kind}:session.{name}"
    for kind in ("session.created", "session.updated")
    for name in ("id", "object", "extensions", "playback_commit_policy", "preamble_after_ms")
) | {"response.output_audio.delta:metadata"}  # audio duration, text marks, playback figures (docs/sessions.md)
# Extension events outside the GA schema (docs/sessions.md): checked, like ours, for a string event_id.
EXTENSION_EVENTS = frozenset({"playback.acknowledged"})
# The overlap policy's session fields and its decisions (docs/sessions.md, "Overlap policy").
KNOWN_EXTRA |= {f"{kind}:session.{name}" for kind in ("session.created", "session.updated")
                for name in ("overlap_policy", "overlap_short_ack_ms", "overlap_barge_in_ms")}
EXTENSION_EVENTS |= {"overlap.decision"}


def _models_by_type() -> dict[str, type[pydantic.BaseModel]]:
    union = get_args(RealtimeServerEvent)[0]
    models: dict[str, type[pydantic.BaseModel]] = {}
    for model in get_args(union):
        (literal,) = get_args(model.model_fields["type"].annotation)
        models[literal] = model
    return models


_MODELS = _models_by_type()
# The session contract (docs/sessions.md, "Resume and replay"): every event of a session carries its
# server_event_seq; session.created names the session, its socket's generation, a resume token and
# the session's capabilities; the lifecycle events are extensions.
KNOWN_EXTRA |= {f"{kind}:server_event_seq" for kind in _MODELS} | {
    f"session.created:{name}"
    for name in ("session_id", "attachment_generation", "resume_token", "session.capabilities")}
EXTENSION_EVENTS |= {"session.resumed", "session.replaced", "session.heartbeat_ack", "session.closed",
                     "session.expired", "session.resync_required"}


class ProtocolViolation(AssertionError):
    """The server sent something a strict Realtime client would reject."""


def _extra_fields(value: Any, path: str) -> list[str]:
    """Paths of fields the GA schema does not define (openai models allow extras)."""
    found: list[str] = []
    if isinstance(value, pydantic.BaseModel):
        found.extend(f"{path}.{key}" for key in value.model_extra or {})
        for name in type(value).model_fields:
            found.extend(_extra_fields(getattr(value, name), f"{path}.{name}"))
    elif isinstance(value, list | tuple):
        for index, entry in enumerate(value):
            found.extend(_extra_fields(entry, f"{path}[{index}]"))
    return found


def validate_server_event(event: Any, allowed_extra: Iterable[str] = ()) -> None:
    """Raise ProtocolViolation unless ``event`` is a valid server event.

    Standard events must validate against the GA schema and carry no field the
    schema lacks (save ``allowed_extra``, as ``"session.created:session.extensions"``
    paths); extension events need only a string ``event_id``.
    """
    if not isinstance(event, dict):
        raise ProtocolViolation(f"a server event must be a JSON object, got {event!r:.200}")
    kind = event.get("type")
    if not isinstance(event.get("event_id"), str) or not event["event_id"]:
        raise ProtocolViolation(f"{kind} has no string event_id: {event!r:.300}")
    if isinstance(kind, str) and (kind.startswith(EXTENSION_PREFIX) or kind in EXTENSION_EVENTS):
        return
    model = _MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ProtocolViolation(f"{kind!r} is not a GA Realtime server event type")
    try:
        parsed = model.model_validate(event)
        _SERVER_EVENT.validate_python(event)
    except pydantic.ValidationError as error:
        raise ProtocolViolation(f"{kind} does not match the GA schema: {error}\nevent: {event!r:.600}") from None
    allowed = KNOWN_EXTRA | set(allowed_extra)
    extra = [p for p in _extra_fields(parsed, "") if f"{kind}:{p.lstrip('.')}" not in allowed]
    if extra:
        raise ProtocolViolation(f"{kind} has fields outside the GA schema: {extra}")


def matcher(match: Match) -> Callable[[Event], bool]:
    """An event type name, or any predicate on an event."""
    if isinstance(match, str):
        return lambda event: event.get("type") == match
    return match


def types(events: Iterable[Event]) -> list[str]:
    return [str(event.get("type")) for event in events]


# ---------------------------------------------------------------- audio


def tone(seconds: float, rate: int, frequency: float = 440.0, level: float = 0.3) -> npt.NDArray[np.float32]:
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    return (level * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


def silence(seconds: float, rate: int) -> npt.NDArray[np.float32]:
    return np.zeros(int(seconds * rate), dtype=np.float32)


def spoken_turn(
    rate: int, speech_s: float = 0.6, silence_s: float = 0.8, lead_s: float = 0.1
) -> npt.NDArray[np.float32]:
    """Silence, a loud tone (speech to the scripted VAD), then enough silence to end the turn."""
    return np.concatenate([silence(lead_s, rate), tone(speech_s, rate), silence(silence_s, rate)])


def _ulaw_encode_one(sample: int) -> int:
    # G.711 µ-law, written from the standard independently of the server's tables.
    sign = 0x80 if sample < 0 else 0
    magnitude = min(abs(sample), 32635) + 0x84
    exponent = magnitude.bit_length() - 8
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return ~(sign | (exponent << 4) | mantissa) & 0xFF


def _ulaw_decode_one(code: int) -> int:
    code = ~code & 0xFF
    magnitude = ((((code & 0x0F) << 3) + 0x84) << ((code >> 4) & 0x07)) - 0x84
    return -magnitude if code & 0x80 else magnitude


def _alaw_encode_one(sample: int) -> int:
    value = sample >> 3
    if value >= 0:
        mask = 0xD5
    else:
        mask, value = 0x55, -value - 1
    segment = max(0, value.bit_length() - 5)
    if segment >= 8:
        return 0x7F ^ mask
    shift = 1 if segment < 2 else segment
    return ((segment << 4) | ((value >> shift) & 0x0F)) ^ mask


def _alaw_decode_one(code: int) -> int:
    code ^= 0x55
    magnitude = (code & 0x0F) << 4
    segment = (code >> 4) & 0x07
    if segment == 0:
        magnitude += 8
    else:
        magnitude = (magnitude + 0x108) << (segment - 1)
    return magnitude if code & 0x80 else -magnitude


@functools.cache
def _g711_tables(fmt: str) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int16]]:
    encode_one, decode_one = (
        (_ulaw_encode_one, _ulaw_decode_one) if fmt == "audio/pcmu" else (_alaw_encode_one, _alaw_decode_one)
    )
    encode = np.array([encode_one(v) for v in range(-32768, 32768)], dtype=np.uint8)
    decode = np.array([decode_one(c) for c in range(256)], dtype=np.int16)
    return encode, decode


def encode_audio(samples: npt.NDArray[Any], fmt: str = "audio/pcm") -> bytes:
    """Float32 (-1..1) or int16 samples -> wire bytes of ``fmt``."""
    pcm = samples if samples.dtype == np.int16 else (np.clip(samples, -1, 1) * 32767).astype(np.int16)
    if fmt == "audio/pcm":
        return pcm.astype("<i2").tobytes()
    encode, _ = _g711_tables(fmt)
    return encode[pcm.astype(np.int32) + 32768].tobytes()


def decode_audio(payload: str | bytes, fmt: str = "audio/pcm") -> npt.NDArray[np.int16]:
    """Base64 text (or raw bytes) of ``fmt`` -> int16 samples."""
    raw = base64.b64decode(payload, validate=True) if isinstance(payload, str) else payload
    if fmt == "audio/pcm":
        if len(raw) % 2:
            raise ProtocolViolation("PCM16 audio with an odd number of bytes")
        return np.frombuffer(raw, dtype="<i2").astype(np.int16)
    _, decode = _g711_tables(fmt)
    return decode[np.frombuffer(raw, dtype=np.uint8)]


# ---------------------------------------------------------------- client


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
        reply = await self.wait_for(
            lambda e: e.get("type") == "session.updated" or _is_error_for(e, event_id), timeout
        )
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


def _is_error_for(event: Event, event_id: str) -> bool:
    return event.get("type") == "error" and (event.get("error") or {}).get("event_id") == event_id


def is_error_for(event_id: str, code: str | None = None) -> Callable[[Event], bool]:
    """Matches the ``error`` event answering the client event ``event_id`` (with ``code``)."""

    def match(event: Event) -> bool:
        return _is_error_for(event, event_id) and (code is None or event["error"].get("code") == code)

    return match


def of_response(response_id: str, *kinds: str) -> Callable[[Event], bool]:
    """Matches events of one response (optionally of the given types)."""

    def match(event: Event) -> bool:
        rid = event.get("response_id") or (event.get("response") or {}).get("id")
        return rid == response_id and (not kinds or event.get("type") in kinds)

    return match
