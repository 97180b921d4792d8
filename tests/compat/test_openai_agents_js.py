"""@openai/agents (JavaScript) RealtimeSession over OpenAIRealtimeWebSocket, unmodified, against our server.

The client side is tests/node/realtime_session.test.mjs, run with ``node --test``;
this test starts the scripted server and hands the script its URL and the
conversation. Setup: ``npm ci --prefix tests/node``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
TEST_FILE = "realtime_session.test.mjs"
NODE_TIMEOUT = 150

STORY = " ".join(
    f"Chapter {n}: the little robot walked along the shore, counting the waves and the shells it found."
    for n in range(1, 5)
)

pytestmark = pytest.mark.node


@pytest.fixture
def node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    if not (NODE_DIR / "node_modules" / "@openai" / "agents").is_dir():
        pytest.fail(
            f"@openai/agents is not installed for the Node test ({NODE_DIR / 'node_modules'} is missing): "
            "run `npm ci --prefix tests/node` from the repository root (`make test` does it)"
        )
    return node


@pytest.fixture
def conversation(conversation: Any) -> Any:
    # After the shared turns: a long answer the user talks over, the reply to that, and a long
    # answer the client interrupts. 30 ms a token keeps a story in progress for about two seconds.
    return dataclasses.replace(
        conversation,
        extra_transcripts=("Tell me a story.", "Stop, please.", "Tell me another story."),
        extra_replies=(STORY, "Okay, I will stop.", STORY.replace("robot", "crab")),
        token_delay_ms=30.0,
    )


def test_openai_agents_js_realtime_session(node, scripted_server, conversation) -> None:
    env = {
        **os.environ,
        "S2S_REALTIME_URL": scripted_server.ws_url,
        "S2S_CONVERSATION": json.dumps(dataclasses.asdict(conversation)),
        "S2S_STEP_TIMEOUT_MS": "20000",
    }
    try:
        result = subprocess.run(
            [node, "--test", "--test-reporter=spec", TEST_FILE],
            cwd=NODE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=NODE_TIMEOUT,
        )
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"node --test did not finish in {NODE_TIMEOUT} s:\n{error.stdout}\n{error.stderr}")
    report = (
        f"node --test exited {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    )
    assert result.returncode == 0, report
    # Guard against a run that passed because it ran nothing.
    counts = {
        key: int(value) for key, value in re.findall(r"^ℹ (tests|pass|fail) (\d+)$", result.stdout, re.M)
    }
    assert counts.get("tests", 0) >= 6, report
    assert counts.get("pass") == counts["tests"] and counts.get("fail") == 0, report
