"""``bench tools --model-only``: the LLM alone on the written requests, its calls scored (no server, no voice).

Each request of ``tools_set.json`` is one user turn to the local model in
this process, through the handler ``serve`` runs (its prompt, its decoding,
its call parsing), with the tools of ``tools_offered`` (listed from the real
MCP servers). What it counts is what matters for a voice agent's tools:
precision and recall of the calls, right tool and right arguments, on the
tune and held-out requests apart.
"""

from __future__ import annotations

import asyncio
import json
import queue
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from speech_to_speech import registry
from speech_to_speech.bench.quality_score import Call
from speech_to_speech.bench.tools_offered import listed_tools
from speech_to_speech.bench.tools_score import judge, schema_defaults, summarise
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.messages.generation import (
    AssistantTextPart,
    AssistantToolCallPart,
    ChatMessage,
    GenerateResponseRequest,
    PromptPrefill,
    TokenUsage,
)
from speech_to_speech.pipeline.queues import NotifyingQueue
from speech_to_speech.pipeline.session_config import ConfigHolder
from speech_to_speech.testing.engine import loading, stage

SET_PATH = Path(__file__).with_name("tools_set.json")
SPLITS = ("tune", "held_out")


@dataclass(frozen=True)
class ModelOnlyConfig:
    request_set: Path = SET_PATH
    max_output_tokens: int = 96


def load_requests(path: Path = SET_PATH) -> list[dict[str, Any]]:
    requests = json.loads(path.read_text())["requests"]
    return [r for r in requests if isinstance(r, dict)]


def expected_call(request: dict[str, Any]) -> Call | None:
    want = request.get("expect")
    return Call(want["name"], want.get("arguments") or {}) if want else None


def split_summaries(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Precision and recall over all requests and over each split."""
    def verdicts(rows: list[dict[str, Any]]) -> list[Any]:
        return [row["verdict_obj"] for row in rows]

    summary = {"all": summarise(verdicts(samples))}
    for split in SPLITS:
        summary[split] = summarise(verdicts([s for s in samples if s["split"] == split]))
    return summary


def ask(request: dict[str, Any], index: int, tools: list[dict[str, Any]],
        config: ModelOnlyConfig) -> GenerateResponseRequest:
    return GenerateResponseRequest(f"resp_{index}", 0, (ChatMessage("user", request["text"]),), tools=tuple(tools),
                                   max_output_tokens=config.max_output_tokens)


def call_ready(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """From the request to its call written (the first call of the run apart: its model may read the tools
    then for the first time), p50 and the slowest of the others."""
    ready = [s["call_ready_s"] for s in samples if s["call_ready_s"] is not None]
    if not ready:
        return {}
    rest = sorted(ready[1:])
    return {"first_call_ready_s": ready[0], "call_ready_s_p50": rest[len(rest) // 2] if rest else None,
            "call_ready_s_max": rest[-1] if rest else None}


def run_model_only(settings: ServerSettings, config: ModelOnlyConfig) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                                                dict[str, Any]]:
    tools = asyncio.run(listed_tools())
    defaults = {tool["name"]: schema_defaults(tool.get("parameters")) for tool in tools}
    started = time.monotonic()
    backend = registry.get("llm", settings.llm.backend)
    model = backend.load(*loading("llm", settings))
    load_s = time.monotonic() - started
    build = stage(backend.handler, settings, model)
    handler = build(HandlerContext(CancelScope(), ConfigHolder(None)), queue.Queue(), queue.Queue(), NotifyingQueue())
    requests = load_requests(config.request_set)
    # As serve does at session.update: the prompt with the tools read ahead, before the user's first words.
    began = time.monotonic()
    for _ in handler.process(PromptPrefill(ask(requests[0], 0, tools, config))):
        pass
    writer = getattr(model, "call_writer", None)  # a call writer reads it in idle time (llama.cpp's)
    if writer is not None:
        writer.reader.wait_caught_up()
    read_ahead_s = time.monotonic() - began
    samples = []
    for index, request in enumerate(requests):
        asked = ask(request, index, tools, config)
        began = time.monotonic()
        parts, call_ready_s = [], None
        for part in handler.process(asked):
            parts.append(part)
            if isinstance(part, AssistantToolCallPart) and call_ready_s is None:
                call_ready_s = round(time.monotonic() - began, 2)  # the call written: the tool can run
        seconds = time.monotonic() - began
        usage = next((p for p in parts if isinstance(p, TokenUsage)), None)
        calls = [Call.parse(p.name, p.arguments) for p in parts if isinstance(p, AssistantToolCallPart)]
        said = "".join(p.text for p in parts if isinstance(p, AssistantTextPart))
        expected = expected_call(request)
        verdict = judge(calls, expected, defaults.get(expected.name, {}) if expected else {})
        samples.append({"name": request["name"], "split": request["split"], "text": request["text"],
                        "expected": request.get("expect"), "calls": [asdict(c) for c in calls], "said": said,
                        "verdict": asdict(verdict) | {"correct": verdict.correct}, "seconds": round(seconds, 2),
                        "call_ready_s": call_ready_s, "prompt_tokens": usage.input_tokens if usage else None,
                        "cached_tokens": usage.cached_tokens if usage else None, "verdict_obj": verdict})
    summary = {**split_summaries(samples), "model_load_s": round(load_s, 1), "read_ahead_s": round(read_ahead_s, 2),
               "seconds_per_request_p50": sorted(s["seconds"] for s in samples)[len(samples) // 2],
               **call_ready(samples)}
    for sample in samples:
        del sample["verdict_obj"]
    recorded = {"mode": "model-only", "request_set": config.request_set.name, "tools": [t["name"] for t in tools],
                "max_output_tokens": config.max_output_tokens}
    return summary, samples, recorded
