"""A loopback TCP relay in front of a server, whose connections a test can cut like a network would.

A client connects to the proxy instead of the server; every byte is relayed
both ways. :meth:`TcpProxy.cut` drops every connection at the TCP level (no
WebSocket close frame, no FIN: a reset), the server's side first, as a
failing network or a restarted load balancer does. Tests of resume and of
client reconnects use it to break a socket from the server's side, which a
client's own ``abort()`` cannot do.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

CHUNK = 64 * 1024


@dataclass(eq=False)
class _Link:
    client: asyncio.StreamWriter
    server: asyncio.StreamWriter


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.host = "127.0.0.1"
        self.port = 0
        self.connections = 0  # accepted so far
        self._links: set[_Link] = set()
        self._server: asyncio.Server | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, target_host: str, target_port: int) -> AsyncIterator[TcpProxy]:
        proxy = cls(target_host, target_port)
        proxy._server = await asyncio.start_server(proxy._accept, proxy.host, 0)
        proxy.port = proxy._server.sockets[0].getsockname()[1]
        try:
            yield proxy
        finally:
            proxy.cut()
            proxy._server.close()
            await proxy._server.wait_closed()

    def url(self, path: str = "/v1/realtime") -> str:
        return f"ws://{self.host}:{self.port}{path}"

    def cut(self) -> int:
        """Reset every open connection, the server's side first; returns how many were cut."""
        links, self._links = self._links, set()
        for link in links:
            link.server.transport.abort()
            link.client.transport.abort()
        return len(links)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        link = _Link(writer, upstream_writer)
        self._links.add(link)
        await asyncio.gather(_pump(reader, upstream_writer), _pump(upstream_reader, writer),
                             return_exceptions=True)
        self._links.discard(link)
        for side in (writer, upstream_writer):
            side.transport.abort()


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while data := await source.read(CHUNK):
        sink.write(data)
        await sink.drain()
    with contextlib.suppress(OSError):
        sink.write_eof()
