"""@openai/agents (JavaScript) RealtimeSession over OpenAIRealtimeWebSocket, unmodified, against our server.

The client side is tests/node/realtime_session.test.mjs, run with ``node --test``.
Setup: ``npm ci --prefix tests/node``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
TEST_FILE = "realtime_session.test.mjs"

pytestmark = pytest.mark.node


def test_openai_agents_js_realtime_session(scripted_server, conversation) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    if not (NODE_DIR / "node_modules" / "@openai" / "agents").is_dir():
        pytest.fail(f"@openai/agents is not installed for the Node test: run `npm ci --prefix {NODE_DIR}`")
    env = {
        **os.environ,
        "S2S_REALTIME_URL": scripted_server.ws_url,
        "S2S_FIRST_TRANSCRIPT": conversation.first_transcript,
        "S2S_FIRST_REPLY": conversation.first_reply,
        "S2S_TOOL_TRANSCRIPT": conversation.tool_transcript,
        "S2S_TOOL_REPLY": conversation.tool_reply,
        "S2S_STEP_TIMEOUT_MS": "20000",
    }
    try:
        result = subprocess.run(
            [node, "--test", "--test-reporter=spec", TEST_FILE],
            cwd=NODE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"node --test did not finish in 120 s:\n{error.stdout}\n{error.stderr}")
    report = (
        f"node --test exited {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    )
    assert result.returncode == 0, report
    # Guard against a run that passed because it ran nothing.
    counts = {
        key: int(value) for key, value in re.findall(r"^ℹ (tests|pass|fail) (\d+)$", result.stdout, re.M)
    }
    assert (
        counts.get("tests", 0) >= 4 and counts.get("pass") == counts["tests"] and counts.get("fail") == 0
    ), report
