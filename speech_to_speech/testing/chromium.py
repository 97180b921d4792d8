"""Headless Chromium over the DevTools protocol: the demo page's tests and its screenshot.

No Playwright, no browser download: the system's Chromium (Debian's ``chromium``) is started
with ``--remote-debugging-port=0`` and one WebSocket speaks the DevTools protocol to its page.
That is enough to open a URL, evaluate JavaScript, wait for a condition and take a screenshot.

Chromium's fake microphone plays a WAV file (16-bit PCM; 48 kHz is safe) in a loop, and the two
WebRTC flags let a peer connection to 127.0.0.1 work with no STUN server.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np
from websockets.sync.client import connect
from websockets.sync.connection import Connection

from speech_to_speech.audio.wav import write_wav
from speech_to_speech.testing.scripted import tone

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = "sudo apt-get install chromium"

# WebRTC on loopback: Chromium hides host candidates behind mDNS names and keeps 127.0.0.1 out of
# peer connections unless told otherwise.
WEBRTC_LOOPBACK_FLAGS = ("--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns")


def find_chromium() -> str | None:
    """``$S2S_CHROMIUM`` if set, else the first Chromium or Chrome on ``PATH``."""
    explicit = os.environ.get("S2S_CHROMIUM")
    if explicit:
        return shutil.which(explicit) or (explicit if Path(explicit).is_file() else None)
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def write_question_wav(path: Path, pause_after_s: float, rate: int = 48000) -> Path:
    """What the fake microphone says: a little silence, 0.8 s of loud tone (a question to the scripted
    VAD), then ``pause_after_s`` of silence; mono 16-bit PCM at 48 kHz, as Chromium's fake capture wants."""
    audio = np.concatenate([np.zeros(int(0.4 * rate)), tone(0.8, rate, level=0.5), np.zeros(int(pause_after_s * rate))])
    write_wav(path, audio, rate)
    return path


def fake_microphone_flags(wav: Path) -> list[str]:
    """The microphone is granted without a prompt and plays ``wav``, looped."""
    return [
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}",
    ]


class PageError(AssertionError):
    """A script failed in the page, or a condition never held; says what the page logged."""


class Page:
    """One page of a running Chromium, driven over its DevTools WebSocket."""

    def __init__(self, socket: Connection, process: subprocess.Popen[bytes] | None = None) -> None:
        self._socket = socket
        self._process = process
        self._next_id = 0
        self.console: list[str] = []

    def kill(self) -> None:
        """End the browser at once, as a closed laptop lid or a killed tab does: nothing is hung up."""
        if self._process is not None:
            with suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=10)

    def call(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        request_id = self._next_id
        self._socket.send(json.dumps({"id": request_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PageError(f"{method}: no answer from Chromium in {timeout} s")
            message = json.loads(self._socket.recv(timeout=remaining))
            if message.get("id") == request_id:
                if "error" in message:
                    raise PageError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self._on_event(message)

    def _on_event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
            self.console.append(f"console.{params.get('type')}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.console.append(f"uncaught: {details.get('exception', {}).get('description') or details.get('text')}")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        """The value of a JavaScript expression (awaited if it is a promise), as JSON."""
        result = self.call("Runtime.evaluate", timeout=timeout, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise PageError(f"{expression}: {details.get('exception', {}).get('description') or details}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float, what: str, *, explain: str = "null") -> Any:
        """Poll ``expression`` until it is truthy; on timeout fail with ``explain``'s value and the console."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except PageError:
                value = None  # the page is (re)loading
            if value:
                return value
            if time.monotonic() > deadline:
                state = self.evaluate(explain)
                log = "\n".join(self.console[-30:]) or "(nothing)"
                raise PageError(f"timed out after {timeout} s waiting for {what}\npage: {state}\nconsole:\n{log}")
            time.sleep(0.1)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)["data"]
        path.write_bytes(base64.b64decode(data))
        return path


@contextmanager
def chromium(
    args: Sequence[str] = (),
    executable: str | None = None,
    window: tuple[int, int] = (1000, 900),
    startup_timeout: float = 30.0,
) -> Iterator[Page]:
    """Start headless Chromium with ``args``, yield its page (a ``window``-sized viewport), and stop it afterwards."""
    executable = executable or find_chromium()
    if executable is None:
        raise FileNotFoundError(f"no Chromium found: install it ({INSTALL_HINT}) or set S2S_CHROMIUM")
    with tempfile.TemporaryDirectory(prefix="s2s-chromium-", ignore_cleanup_errors=True) as profile:
        log_path = Path(profile) / "chromium.log"
        command = [
            executable,
            "--headless",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            f"--window-size={window[0]},{window[1]}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--mute-audio",
            "--autoplay-policy=no-user-gesture-required",
            *(["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
            *args,
            "about:blank",
        ]
        with log_path.open("wb") as log:
            # Its own process group: Chromium's helper processes end with it, and nothing else does.
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        try:
            port = _devtools_port(Path(profile), process, log_path, startup_timeout)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
                targets = json.load(response)
            page_url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
            with connect(page_url, max_size=None, open_timeout=10) as socket:
                page = Page(socket, process)
                page.call("Runtime.enable")
                page.call("Page.enable")
                page.call("Emulation.setDeviceMetricsOverride", width=window[0], height=window[1],
                          deviceScaleFactor=1, mobile=False)
                yield page
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """End Chromium, then any helper process of its group, before its profile folder is removed."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def _devtools_port(profile: Path, process: subprocess.Popen[bytes], log: Path, timeout: float) -> int:
    """Chromium writes the port it chose into DevToolsActivePort in its profile."""
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Chromium exited ({process.returncode}):\n{log.read_text(errors='replace')[-3000:]}")
        if port_file.is_file():
            first_line = port_file.read_text().splitlines()[:1]
            if first_line and first_line[0].isdigit():
                return int(first_line[0])
        time.sleep(0.05)
    raise RuntimeError(f"Chromium did not start in {timeout} s:\n{log.read_text(errors='replace')[-3000:]}")
