"""What the call writer (``--llm_tool_call_model``) costs: time to a written call, the cold read of the tools, memory.

The quality preset's 0.5B with the packaged 1.5B as its call writer, on bench
tools' requests that need a call, through the handler ``serve`` runs:

- the prompt with bench tools' five tools read cold into a fresh context of
  each model (what the first session after a start reads; two threads);
- for each request, from the request to its call written, by the 0.5B alone
  and with the 1.5B writing, one after the other (so that a busy neighbour
  slows both alike), both contexts warm (the tools read before);
- the RSS of a process that loaded the preset and wrote one call, with and
  without the writer (each in a process of its own).

    .venv/bin/python scripts/call_writer_probe.py [--split tune] [--out docs/benchmarks/tools/call-writer-cost.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from speech_to_speech import registry
from speech_to_speech.bench import results
from speech_to_speech.bench.tool_calls import ModelOnlyConfig, ask, load_requests
from speech_to_speech.bench.tools_offered import listed_tools
from speech_to_speech.config import ServerSettings
from speech_to_speech.llm.chat_prompt import prompt_for
from speech_to_speech.llm.llama_contexts import read_ahead
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart
from speech_to_speech.pipeline.queues import NotifyingQueue
from speech_to_speech.pipeline.session_config import ConfigHolder
from speech_to_speech.presets import preset
from speech_to_speech.testing.engine import loading, stage

WRITER = "qwen2.5-coder-1.5b"


def _settings(writer: bool) -> ServerSettings:
    # One context per model, as a serve of one unit has.
    flags: dict[str, Any] = {**preset("quality"), "llm_contexts": 1, "llm_tool_call_model": WRITER if writer else None}
    return ServerSettings(**flags)


def _handler(settings: ServerSettings, model: Any) -> Any:
    build = stage(registry.get("llm", settings.llm.backend).handler, settings, model)
    return build(HandlerContext(CancelScope(), ConfigHolder(None)), queue.Queue(), queue.Queue(), NotifyingQueue())


def _call_ready(handler: Any, request: Any) -> tuple[float | None, str | None]:
    began = time.monotonic()
    for part in handler.process(request):
        if isinstance(part, AssistantToolCallPart):
            return round(time.monotonic() - began, 2), f"{part.name} {part.arguments}"
    return None, None


def _rss_mb() -> dict[str, float]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {name: round(int(fields[name].split()[0]) / 1024) for name in ("VmRSS", "VmHWM")}


def rss(writer: bool) -> dict[str, float]:
    """Load the preset (with the writer or not), read the tools ahead, write one call: the process's RSS."""
    settings = _settings(writer)
    model = registry.get("llm", "llama-cpp").load(*loading("llm", settings))
    handler = _handler(settings, model)
    tools = asyncio.run(listed_tools())
    request = ask({"text": "What time is it in Tokyo?"}, 0, tools, ModelOnlyConfig())
    cold_read(model, request, settings)
    _call_ready(handler, request)
    return _rss_mb()


def cold_read(model: Any, request: Any, settings: ServerSettings) -> dict[str, Any]:
    """Seconds each model takes to read the prompt with the tools into its first context, emptied (the
    handlers below prefer it), on the preset's threads."""
    tokens = model.llm.tokenize(prompt_for(model.template, request, settings.llm, model.context,
                                           calls_ruled_out=True).encode(), add_bos=False, special=True)
    figures: dict[str, Any] = {"prompt_tokens": len(tokens)}
    pools = {"main": model.pool, **({"writer": model.call_writer.pool} if model.call_writer else {})}
    for name, pool in pools.items():
        with pool.checkout(0) as (_, llm):
            llm.reset()
            began = time.monotonic()
            read_ahead(llm, tokens, lambda: True, 512)
            figures[f"{name}_read_s"] = round(time.monotonic() - began, 2)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="tune", help="tune, held_out or all (default tune)")
    parser.add_argument("--rss", choices=("main", "writer"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.rss:
        print(json.dumps(rss(args.rss == "writer")))
        return 0
    load_before = os.getloadavg()
    settings = _settings(writer=True)
    model = registry.get("llm", "llama-cpp").load(*loading("llm", settings))
    with_writer, alone = _handler(settings, model), _handler(settings, replace(model, call_writer=None))
    tools = asyncio.run(listed_tools())
    requests = [r for r in load_requests() if r.get("expect") and args.split in ("all", r["split"])]
    asked = [ask(r, i, tools, ModelOnlyConfig()) for i, r in enumerate(requests)]
    cold = cold_read(model, asked[0], settings)
    rows = []
    for request, item in zip(requests, asked, strict=True):
        alone_s, alone_call = _call_ready(alone, item)
        writer_s, writer_call = _call_ready(with_writer, item)
        rows.append({"name": request["name"], "main_alone_s": alone_s, "with_writer_s": writer_s,
                     "main_alone_call": alone_call, "with_writer_call": writer_call})
        print(rows[-1], flush=True)
    memory = {mode: json.loads(subprocess.run([sys.executable, __file__, "--rss", mode], check=True,
                                              capture_output=True, text=True).stdout.splitlines()[-1])
              for mode in ("main", "writer")}

    def p50(key: str) -> float:
        return round(statistics.median(row[key] for row in rows if row[key] is not None), 2)

    result = {
        "command": "python scripts/call_writer_probe.py " + " ".join(sys.argv[1:]).split(" --out")[0],
        "machine": results.machine(), "load_average_before": load_before,
        "load_average_after": os.getloadavg(), "cold_read": cold,
        "call_ready_p50_s": {"main_alone": p50("main_alone_s"), "with_writer": p50("with_writer_s")},
        "rss_mb": memory, "requests": rows,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "requests"}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
