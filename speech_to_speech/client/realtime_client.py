"""RealtimeClient: one Realtime session as an async context manager that survives a dropped connection.

```python
async with RealtimeClient("ws://127.0.0.1:8765/v1/realtime") as client:
    await client.stream_pcm(question_pcm16_24k)
    async for response in client.responses():
        async for chunk in response.audio():
            play(chunk)
        break
```

Entering connects and waits for ``session.created`` (opening.py), then
applies ``session`` with a ``session.update``; leaving sends ``session.close``
and waits (briefly) for ``session.closed``. In between, a reader turns frames
into typed events for every ``events()``/``responses()`` reader (readers.py)
and a writer sends what the caller queued, in order (link_runner.py, outbox.py).

When the connection drops and the server said ``supports_session_resume``,
the client resumes the session (reconnect.py) from the last
``server_event_seq`` it holds, drops replayed events it already had and
publishes one ``ConnectionResumed``: readers see one gapless, duplicate-free
stream, and what the caller sent meanwhile goes out on the new connection.
Acks and heartbeats go out on their own timers (keepalive.py).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from speech_to_speech.client.config import DEFAULT_URL
from speech_to_speech.client.errors import ConnectionLost, ProtocolError, RealtimeClientError, SessionClosed
from speech_to_speech.client.events import (
    ErrorEvent,
    RealtimeEvent,
    SessionCreated,
    announced_end,
    protocol_error,
    resumed_event,
    session_audio_rate,
)
from speech_to_speech.client.keepalive import Keepalive
from speech_to_speech.client.link import Connector, Link, LinkClosed, websocket_connector
from speech_to_speech.client.link_runner import LinkRunner
from speech_to_speech.client.opening import open_session
from speech_to_speech.client.outbox import Outbox
from speech_to_speech.client.readers import Readers, Refusal
from speech_to_speech.client.reconnect import FINAL_CLOSE_CODES, ReconnectPolicy, Resumed, reattach
from speech_to_speech.client.responses import ResponseHandle
from speech_to_speech.client.sequence import ReceivedSeqs
from speech_to_speech.client.streams import Subscription
from speech_to_speech.protocol.error_codes import CLIENT_CLOSE

log = logging.getLogger(__name__)


class RealtimeClient:
    """A Realtime session over a WebSocket (or any ``connect``), with automatic resume.

    ``session``: the session object for the opening ``session.update`` (None: keep the server's).
    ``reconnect``: None turns automatic resume off (a drop then raises ConnectionLost).
    ``heartbeat_interval_s`` / ``event_ack_interval_s``: None turns that timer off.
    ``connect``: opens a ``Link`` for a URL (tests, the in-process client); the default opens a WebSocket.
    """

    def __init__(self, url: str = DEFAULT_URL, *, session: Mapping[str, Any] | None = None,
                 model: str | None = None, api_key: str | None = None,
                 reconnect: ReconnectPolicy | None = ReconnectPolicy(),  # noqa: B008 - frozen, shared safely
                 heartbeat_interval_s: float | None = 30.0, event_ack_interval_s: float | None = 1.0,
                 handshake_timeout_s: float = 10.0, close_timeout_s: float = 2.0,
                 connect: Connector | None = None, keep_responses: int = 16) -> None:
        self.url = url
        self.reconnect = reconnect
        self.heartbeat_interval_s = heartbeat_interval_s
        self.event_ack_interval_s = event_ack_interval_s
        self.handshake_timeout_s = handshake_timeout_s
        self.close_timeout_s = close_timeout_s
        self._session_config = dict(session) if session is not None else None
        self._connect = connect or websocket_connector(model=model, api_key=api_key, timeout=handshake_timeout_s)
        # What the server told us.
        self.session_id: str | None = None
        self.resume_token: str | None = None
        self.attachment_generation: int | None = None
        self.session_info: dict[str, Any] = {}
        self._last_finished_response_id: str | None = None  # told in session.resume
        self._seqs = ReceivedSeqs()
        self.resumes = 0  # connections resumed so far
        self.duplicates_dropped = 0  # replayed events we already had
        # Plumbing.
        self._outbox = Outbox()
        self._links = LinkRunner(self._outbox, self._receive, self._recover)
        self._keepalive = Keepalive(self, self._links.drop)
        self._readers = Readers(lambda: self.output_rate, keep_responses)
        self._closing = False

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> RealtimeClient:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Connect, wait for ``session.created``, start the reader/writer, apply ``session``."""
        link, created = await open_session(self._connect, self.url, timeout=self.handshake_timeout_s)
        self._links.start(link)
        if created.server_event_seq is not None:
            self._seqs.accept(created.server_event_seq, created.type)
        self._adopt(created)
        self._dispatch(created)  # the first event: never a duplicate
        self._keepalive.start()
        if self._session_config is not None:
            try:
                await self.update_session(self._session_config, timeout_s=self.handshake_timeout_s)
            except BaseException:
                await self.close()
                raise

    async def close(self) -> None:
        """Say goodbye (``session.close`` → ``session.closed``, bounded), then close the connection (1000)."""
        if self._closing:
            return
        self._closing = True
        self._keepalive.cancel()  # nothing may follow the goodbye
        try:
            if self._links.link is not None and self.connected and self.capabilities:
                with contextlib.suppress(RealtimeClientError, TimeoutError):
                    await self._request({"type": "session.close"}, ("session.closed",), self.close_timeout_s)
        finally:
            await asyncio.gather(self._links.stop(self.close_timeout_s), self._keepalive.wait_cancelled())
            self._finish(SessionClosed("the client closed the session", reason=CLIENT_CLOSE), None)

    # ------------------------------------------------------------ what the server said

    @property
    def capabilities(self) -> Mapping[str, Any]:
        value = self.session_info.get("capabilities")
        return value if isinstance(value, Mapping) else {}

    @property
    def supports_resume(self) -> bool:
        return bool(self.capabilities.get("supports_session_resume"))

    @property
    def output_rate(self) -> int:
        return session_audio_rate(self.session_info, "output")

    @property
    def input_rate(self) -> int:
        return session_audio_rate(self.session_info, "input")

    @property
    def last_server_event_seq(self) -> int:
        """The resume cursor: every event up to this seq was received (or is gone from the journal for good)."""
        return self._seqs.floor

    @property
    def connected(self) -> bool:
        """True while a connection is up (False while reconnecting, and after the end)."""
        return self._links.up and self._readers.ended is None

    @property
    def ended(self) -> RealtimeClientError | None:
        """Why the session is over (None while it is not)."""
        return self._readers.ended

    # ------------------------------------------------------------ reading

    def events(self) -> Subscription[RealtimeEvent]:
        """Every server event from this call on (typed); ends after the session does.

        Subscribes at once: call it before ``async with`` to also see ``session.created``.
        A connection that is lost for good raises ConnectionLost from the iteration.
        """
        return self._readers.events()

    def __aiter__(self) -> Subscription[RealtimeEvent]:
        return self.events()

    def responses(self) -> Subscription[ResponseHandle]:
        """A handle per assistant response: the ones nobody took yet, then each new one."""
        return self._readers.responses()

    async def wait_for(self, types: str | Iterable[str], timeout_s: float | None = 30.0, *,
                       raise_errors: bool = True) -> RealtimeEvent:
        """The next event of ``types``; an ``error`` event meanwhile raises ProtocolError (unless waited for)."""
        wanted = {types} if isinstance(types, str) else set(types)
        refusal: Refusal = protocol_error if raise_errors else (lambda _error: None)
        return await self._readers.next_of(self.events(), wanted, refusal, timeout_s,
                                           waited_for=" or ".join(sorted(wanted)))

    # ------------------------------------------------------------ sending

    def send_nowait(self, event: Mapping[str, Any]) -> str:
        """Queue a client event (stamped with an ``event_id`` if it has none); returns the ``event_id``."""
        if self._readers.ended is not None:
            raise self._readers.ended
        return self._outbox.put(event)

    async def send(self, event: Mapping[str, Any]) -> str:
        """Send any client event (the escape hatch for events without a method); returns its ``event_id``."""
        return self.send_nowait(event)

    async def update_session(self, session: Mapping[str, Any], *, timeout_s: float | None = 10.0) -> RealtimeEvent:
        """``session.update``, then its ``session.updated`` (ProtocolError if the server rejects it)."""
        return await self._request({"type": "session.update", "session": dict(session)}, ("session.updated",),
                                   timeout_s)

    async def append_audio(self, pcm: bytes) -> str:
        """One ``input_audio_buffer.append`` of PCM16 mono at the session's input rate."""
        return self.send_nowait({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()})

    async def stream_pcm(self, pcm: bytes, *, chunk_ms: int = 100, realtime: bool = True,
                         rate: int | None = None) -> int:
        """Send ``pcm`` (PCM16 mono) as ``chunk_ms`` appends, paced in real time unless ``realtime=False``.

        Returns the number of appends sent.
        """
        rate = rate or self.input_rate
        step = max(2, rate * chunk_ms // 1000 * 2)
        loop = asyncio.get_running_loop()
        started = loop.time()
        count = 0
        for offset in range(0, len(pcm), step):
            await self.append_audio(pcm[offset : offset + step])
            count += 1
            if realtime:
                await asyncio.sleep(max(0.0, started + count * chunk_ms / 1000 - loop.time()))
        return count

    async def commit(self, *, create_response: bool = False) -> str:
        """Seal the buffered audio into a user turn (and ask for an answer when ``create_response``)."""
        event_id = self.send_nowait({"type": "input_audio_buffer.commit"})
        if create_response:
            await self.create_response()
        return event_id

    async def create_response(self, response: Mapping[str, Any] | None = None) -> str:
        event: dict[str, Any] = {"type": "response.create"}
        if response is not None:
            event["response"] = dict(response)
        return self.send_nowait(event)

    async def cancel_response(self, response_id: str | None = None) -> str:
        event: dict[str, Any] = {"type": "response.cancel"}
        if response_id is not None:
            event["response_id"] = response_id
        return self.send_nowait(event)

    async def clear_input(self) -> str:
        return self.send_nowait({"type": "input_audio_buffer.clear"})

    async def ack_playback(self, played_ms: float, *, response_id: str, item_id: str | None = None,
                           committed_ms: float | None = None, truncate: bool | None = None) -> str:
        """``playback.ack``: how much of ``response_id`` the listener has heard (cumulative, in ms)."""
        event: dict[str, Any] = {"type": "playback.ack", "response_id": response_id, "played_ms": int(played_ms)}
        if item_id is not None:
            event["item_id"] = item_id
        if committed_ms is not None:
            event["committed_ms"] = int(committed_ms)
        if truncate is not None:
            event["truncate"] = truncate
        return self.send_nowait(event)

    # ------------------------------------------------------------ internals

    async def _request(self, event: Mapping[str, Any], replies: tuple[str, ...],
                       timeout_s: float | None) -> RealtimeEvent:
        """Send ``event`` and wait for one of ``replies``; an error naming its event_id raises ProtocolError."""
        subscription = self.events()  # before sending: the reply cannot come first
        event_id = self.send_nowait(event)  # raises only after the end, when the subscription was never registered

        def refusal(error: ErrorEvent) -> ProtocolError | None:
            if error.related_event_id != event_id:
                return None  # about another event: not the answer
            return protocol_error(error, f"the server refused {event['type']}")

        return await self._readers.next_of(subscription, replies, refusal, timeout_s, waited_for=" or ".join(replies),
                                           after=f" of {event['type']}")

    def _adopt(self, created: SessionCreated) -> None:
        self.session_info = dict(created.session)
        self.session_id = created.session_id
        self.resume_token = created.resume_token
        generation = created.raw.get("attachment_generation")
        self.attachment_generation = generation if isinstance(generation, int) else None

    def _receive(self, event: RealtimeEvent) -> None:
        seq = event.server_event_seq
        if seq is not None and not self._seqs.accept(seq, event.type):
            self.duplicates_dropped += 1  # replayed, and we have it
            return
        self._dispatch(event)

    def _dispatch(self, event: RealtimeEvent) -> None:
        if event.type == "session.heartbeat_ack":
            self._keepalive.heartbeat_answered()
        elif event.type == "session.updated":
            self._merge_session(event.raw.get("session"))
        elif event.type == "response.done" and event.response_id is not None:
            self._last_finished_response_id = event.response_id
        self._readers.publish(event)
        end = announced_end(event)
        if end is not None:
            self._finish(end, None)

    def _merge_session(self, session: object) -> None:
        if isinstance(session, Mapping):
            self.session_info = {**self.session_info, **session}

    def _finish(self, end: RealtimeClientError, stream_error: RealtimeClientError | None) -> None:
        """The session is over: waits raise ``end``; readers stop (raising ``stream_error`` if given)."""
        if self._readers.end(end, stream_error):
            self._links.down()
            self._outbox.clear()

    async def _recover(self, closed: LinkClosed) -> Link | None:
        """Reconnect and resume after ``closed``; the new link, or None (the session ended, with the reason)."""
        if self._closing or self._readers.ended is not None:
            return None  # a close of our own, or after the end
        lost = closed.lost()
        if (self.reconnect is None or not self.supports_resume or self.session_id is None
                or self.resume_token is None or closed.code in FINAL_CLOSE_CODES):
            self._finish(lost, lost)
            return None
        await self._links.detach()
        log.info("connection lost (%s); resuming session %s", closed, self.session_id)
        try:
            back = await reattach(self._connect, self.url, self.reconnect, lost=lost, session_id=self.session_id,
                                  resume_token=self.resume_token, last_seq=self.last_server_event_seq,
                                  last_finished_response_id=self._last_finished_response_id,
                                  new_event_id=self._outbox.new_event_id, timeout=self.handshake_timeout_s)
        except ConnectionLost as end:  # refused for good (ResumeFailed), or no attempt got through
            self._finish(end, end)
            return None
        self._adopt_resumed(back.resumed)
        self._links.attach(back.link)
        self._dispatch(resumed_event(back.resumed.event, back.attempt))
        log.info("session %s resumed after %d attempt(s)", self.session_id, back.attempt)
        return back.link

    def _adopt_resumed(self, resumed: Resumed) -> None:
        """Take what ``session.resumed`` says; what the old connection lost goes out first on the new one."""
        self.resume_token = resumed.resume_token or self.resume_token
        self.attachment_generation = resumed.attachment_generation or self.attachment_generation
        self.resumes += 1
        self._keepalive.heartbeat_answered()
        self._merge_session(resumed.event.get("session"))
        self._outbox.requeue_lost(resumed.event)

    def __repr__(self) -> str:
        state = "ended" if self._readers.ended else "connected" if self.connected else "not connected"
        return f"<RealtimeClient {self.url} session={self.session_id} {state} seq={self.last_server_event_seq}>"

