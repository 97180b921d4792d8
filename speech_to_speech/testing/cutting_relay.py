"""A WebSocket relay between a client and a real server that can cut every connection abruptly.

It runs in its own thread (so a blocking `talk` can use it too), forwards
frames both ways unchanged, and reads the server's events as they pass, so a
test can cut at an exact point ("after the first audio delta"). A cut aborts
both TCP connections without a close frame, which is what a network failure
looks like to each side; new connections (the client's reconnect) are relayed
as before.

Given several upstreams it is also a load balancer in front of replicas: a
new connection goes to the preferred one (``prefer``), or, where that one
refuses it (its process is gone), to the next that accepts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator, Sequence

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from speech_to_speech.protocol import ABNORMAL_CLOSURE, NO_STATUS_RECEIVED, Event


class CuttingRelay:
    def __init__(self, upstream: str | Sequence[str]) -> None:
        listed = [upstream] if isinstance(upstream, str) else list(upstream)
        self.upstreams = [url.rstrip("/") for url in listed]  # ws://host:port each
        self.prefer = 0  # the upstream a new connection tries first
        self.routed: list[int] = []  # the upstream each relayed connection went to, in order
        self.port = 0
        self.connections = 0  # client connections relayed so far
        self.cuts = 0
        self.paths: list[str] = []  # path and query of each connection, in order
        self.cut_done = threading.Event()
        self.cut_time: float | None = None  # time.monotonic() of the last cut
        self._loop: asyncio.AbstractEventLoop | None = None
        self._live: set[tuple[ServerConnection, ClientConnection]] = set()
        self._rule: tuple[str, int] | None = None
        self._seen: dict[str, int] = {}
        self._lose_s = 0.0
        self._frozen: set[tuple[ServerConnection, ClientConnection]] = set()
        self._losing = False
        self.lost: list[Event] = []  # server events dropped before a cut
        self.from_client: list[Event] = []  # client events relayed (audio appends left out)

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/realtime"

    def cut_after(self, event_type: str, nth: int = 1, *, lose_s: float = 0.0) -> None:
        """Cut once, after the ``nth`` server event of ``event_type`` (counted from now) was relayed.

        ``lose_s``: first drop what the server sends for that long, then cut: events the server
        sent and believes delivered, which only its replay can bring to the client.
        """
        self._rule, self._seen, self._lose_s = (event_type, nth), {}, lose_s
        self.cut_done.clear()

    def freeze(self) -> None:
        """Stop relaying on the connections open now, both ways, without closing anything: a dead network."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(lambda: self._frozen.update(self._live))

    def cut_now(self) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._cut)

    def _cut(self) -> None:
        self._losing = False
        for downstream, upstream in list(self._live):
            for connection in (downstream, upstream):
                if connection.transport is not None:
                    connection.transport.abort()
        self._live.clear()
        self.cut_time = time.monotonic()
        self.cuts += 1
        self.cut_done.set()

    def _check_rule(self, message: str | bytes) -> None:
        if self._rule is None:
            return
        with contextlib.suppress(ValueError, AttributeError):
            kind = json.loads(message).get("type")
            self._seen[kind] = self._seen.get(kind, 0) + 1
            if (kind, self._seen[kind]) == self._rule:
                self._rule = None
                if self._lose_s > 0:
                    self._losing = True
                    asyncio.get_running_loop().call_later(self._lose_s, self._cut)
                else:
                    self._cut()

    async def _handle(self, downstream: ServerConnection) -> None:
        path = downstream.request.path if downstream.request is not None else "/v1/realtime"
        self.connections += 1
        self.paths.append(path)
        upstream = await self._open(path)
        if upstream is None:
            await downstream.close(1011, "relay: every upstream refused")
            return
        pair = (downstream, upstream)
        self._live.add(pair)

        async def down() -> None:
            with contextlib.suppress(ConnectionClosed):
                async for message in upstream:
                    if pair not in self._live:  # cut: nothing more goes through (nor into an aborted socket)
                        break
                    if pair in self._frozen:
                        continue
                    if self._losing:
                        self.lost.append(json.loads(message))
                        continue
                    await downstream.send(message)
                    self._check_rule(message)
            await _pass_close(upstream, downstream)

        async def up() -> None:
            with contextlib.suppress(ConnectionClosed):
                async for message in downstream:
                    if pair not in self._live:
                        break
                    if pair in self._frozen:
                        continue
                    await upstream.send(message)
                    event = json.loads(message)
                    if event.get("type") != "input_audio_buffer.append":
                        self.from_client.append(event)
            await _pass_close(downstream, upstream)

        tasks = [asyncio.create_task(down()), asyncio.create_task(up())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
            self._live.discard(pair)

    async def _open(self, path: str) -> ClientConnection | None:
        """The preferred upstream, or the first after it that accepts the connection."""
        for step in range(len(self.upstreams)):
            index = (self.prefer + step) % len(self.upstreams)
            try:
                upstream = await websockets.connect(self.upstreams[index] + path, max_size=None, compression=None)
            except (OSError, websockets.InvalidHandshake):
                continue
            self.routed.append(index)
            return upstream
        return None

    @contextlib.contextmanager
    def running(self) -> Iterator[CuttingRelay]:
        ready = threading.Event()
        stop: list[asyncio.Future[None]] = []

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            async with serve(self._handle, "127.0.0.1", 0, max_size=None, compression=None) as server:
                self.port = next(iter(server.sockets)).getsockname()[1]
                stop.append(self._loop.create_future())
                ready.set()
                await stop[0]

        thread = threading.Thread(target=asyncio.run, args=(main(),), name="cutting-relay", daemon=True)
        thread.start()
        assert ready.wait(10), "the relay did not start"
        try:
            yield self
        finally:
            assert self._loop is not None
            self._loop.call_soon_threadsafe(_finish, stop[0])
            thread.join(timeout=10)


def _finish(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _pass_close(closed: ServerConnection | ClientConnection, other: ServerConnection | ClientConnection) -> None:
    """Close ``other`` as ``closed`` was: with its close frame's code, or abruptly if it had none."""
    if closed.close_code in (None, NO_STATUS_RECEIVED, ABNORMAL_CLOSURE):
        if other.transport is not None:
            other.transport.abort()
    else:
        await other.close(closed.close_code, closed.close_reason or "")
