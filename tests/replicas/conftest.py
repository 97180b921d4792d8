"""A real redis-server for the replica tests: skipped where none is installed, except in CI, where it fails."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from speech_to_speech.testing.redis_server import INSTALL_HINT, RedisServer, find_redis_server
from speech_to_speech.testing.serve_process import ServeProcess


def _binary() -> str:
    binary = find_redis_server()
    if binary is None:
        message = f"no redis-server found ({INSTALL_HINT}; .ci/run installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)  # CI must run these, not skip them
        pytest.skip(message)
    return binary


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A fresh redis-server on a free loopback port, no persistence, stopped after the test."""
    server = RedisServer(_binary())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def shared_redis() -> Iterator[RedisServer]:
    """One redis-server for a module's tests (each uses keys of its own)."""
    server = RedisServer(_binary())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_binary() -> str:
    """The redis-server a test (or the bench it runs) starts itself."""
    return _binary()


@contextmanager
def two_replicas(redis: RedisServer, *flags: str) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    """Two ``serve`` processes of one unit each, sharing ``redis``, with ``flags`` besides."""
    a, b = (ServeProcess("--session_store", redis.url, "--num_pipelines", "1", *flags) for _ in range(2))
    try:
        a.start()
        b.start()
        yield a, b
    finally:
        a.stop()
        b.stop()
