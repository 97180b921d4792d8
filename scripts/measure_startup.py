"""Time to ready and idle memory of `speech-to-speech serve`, for N pipeline units.

Starts the real server (default models unless flags say otherwise) on a free
loopback port, polls GET /health until it answers 200, waits a moment, and
reads the resident memory of the server's process tree. Prints JSON:

    python scripts/measure_startup.py --units 1 2 4 [-- extra serve flags]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

SERVE = [str(Path(sys.executable).with_name("speech-to-speech")), "serve", "--log_level", "warning"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def measure(units: int, extra: list[str], settle_s: float, timeout_s: float) -> dict[str, float]:
    port = free_port()
    started = time.monotonic()
    server = subprocess.Popen([*SERVE, "--port", str(port), "--num_pipelines", str(units), *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not ready(port):
            if server.poll() is not None or time.monotonic() - started > timeout_s:
                raise RuntimeError(f"the server with {units} unit(s) did not become ready")
            time.sleep(0.05)
        ready_s = time.monotonic() - started
        time.sleep(settle_s)
        process = psutil.Process(server.pid)
        rss = sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])
        return {"units": units, "ready_s": round(ready_s, 2), "rss_mb": round(rss / 2**20)}
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--settle", type=float, default=2.0, help="Seconds to wait after ready.")
    parser.add_argument("--timeout", type=float, default=180.0)
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    print(json.dumps([measure(n, extra, args.settle, args.timeout) for n in args.units]))


if __name__ == "__main__":
    main()
