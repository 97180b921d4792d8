"""Opening the Realtime WebSocket, with one-line errors for the usual mistakes."""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI

from speech_to_speech.client.errors import ClientError, ServerUnreachable, SessionLimitReached, WrongURL

EXPECTED = "expected ws://HOST:PORT/v1/realtime"


def with_model(url: str, model: str | None) -> str:
    """``url`` with ``?model=`` set (OpenAI's endpoint wants it; ours accepts and ignores it)."""
    if not model:
        return url
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "model"] + [("model", model)]
    return urlunsplit(parts._replace(query=urlencode(query)))


async def connect(url: str, *, model: str | None = None, api_key: str | None = None,
                  timeout: float = 10.0) -> ClientConnection:
    scheme = urlsplit(url).scheme
    if scheme in ("http", "https"):
        raise WrongURL(f"{url} is an HTTP URL; use ws{scheme[4:]}://… ({EXPECTED})")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    target = with_model(url, model)
    try:
        return await asyncio.wait_for(
            websockets.connect(target, additional_headers=headers, max_size=None, open_timeout=timeout), timeout
        )
    except InvalidURI:
        raise WrongURL(f"{url!r} is not a WebSocket URL ({EXPECTED})") from None
    except InvalidStatus as error:
        code = error.response.status_code
        if code == 401:
            raise ClientError(f"the server at {url} refused our credentials (HTTP 401); check --api-key") from None
        if code == 503:
            raise SessionLimitReached(f"the server at {url} is at its session limit (HTTP 503); try again later") \
                from None
        if code == 429:
            raise ClientError(f"the server at {url} refused more sessions from this address (HTTP 429)") from None
        # Starlette answers 403 to a WebSocket on an unknown path; 404 is the usual answer elsewhere.
        hint = {403: "wrong path (or credentials)", 404: "no Realtime endpoint at this path"}.get(
            code, "not a WebSocket upgrade")
        raise WrongURL(f"{url} answered HTTP {code}: {hint} ({EXPECTED})") from None
    except InvalidHandshake as error:
        raise WrongURL(f"{url} did not answer as a WebSocket server ({error}; {EXPECTED})") from None
    except TimeoutError:
        raise ServerUnreachable(f"no answer from {url} within {timeout:.0f}s; is the server running?") from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise ServerUnreachable(
            f"cannot reach the server at {url} ({reason}); is `speech-to-speech serve` running?"
        ) from None
