"""`local`: the server and the packaged client in one process, over a loopback WebSocket.

The server runs in a background thread (its own event loop, so the terminal
view never delays it); the client connects to it like any other Realtime
client, so `local` exercises exactly the protocol every client sees.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator

from speech_to_speech.client.command_run import run_client
from speech_to_speech.client.config import RealtimeAudioClientConfig
from speech_to_speech.client.devices import check_devices
from speech_to_speech.client.errors import ClientError
from speech_to_speech.config import ServerSettings

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 30.0


@contextlib.contextmanager
def loopback_server(settings: ServerSettings, *, any_port: bool) -> Iterator[str]:
    """Serve ``settings`` on 127.0.0.1 (a free port when ``any_port``); yields the WebSocket URL."""
    from speech_to_speech.realtime.app.server import build_app
    from speech_to_speech.realtime.app.serving import RealtimeServer

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0 if any_port else settings.server.port))
    port = int(sock.getsockname()[1])
    app, pool = build_app(settings)  # loads the models: the slow part
    # The one server setup of `serve`: the same frame cap, and sessions closed before connections on exit.
    server = RealtimeServer(app, host="127.0.0.1", port=port, log_level="warning",
                            max_event_bytes=settings.limits.max_event_bytes)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="local-server", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the in-process server did not start")
            time.sleep(0.02)
        yield f"ws://127.0.0.1:{port}/v1/realtime"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        pool.close()
        sock.close()


def run_local_session(prog: str, settings: ServerSettings, config: RealtimeAudioClientConfig) -> int:
    try:  # before the models load, so a missing device is reported at once
        check_devices(config.input_device, config.output_device,
                      need_input=config.input_wav is None, need_output=config.output_wav is None)
    except ClientError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 1
    # --port (flag or YAML) pins the port; otherwise any free one, so `local` never clashes with `serve`.
    with loopback_server(settings, any_port="port" not in settings.server.model_fields_set) as url:
        log.info("local server at %s", url)
        return run_client(prog, config.model_copy(update={"url": url}))
