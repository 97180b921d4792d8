"""``bench quality``: are the answers right? A fixed set of spoken requests, scored automatically.

The requests (``quality_set.json``, shipped with the package) are short
facts, arithmetic, unit conversions, instructions about the answer's shape,
follow-ups that need the turn before, and requests that need a tool of
``--tool-module`` (default :mod:`quality_tools`), whose right call is known.
Every turn is spoken by hibari (cached, like the turns corpus: see
:mod:`corpus`) into a fresh session with server VAD, as a microphone would
send it; turns of one request share the session. A tool call is answered
with the module's result and a new response, so the spoken follow-up is
heard too. Scoring is :mod:`quality_score`; end of speech -> first audio
delta is timed on every turn.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.bench import audio, corpus
from speech_to_speech.bench.events import Clock, latency_sample, response_id, turn
from speech_to_speech.bench.mic import ask, live_mic
from speech_to_speech.bench.quality_score import Call, follow_up_ok, score, summarize_quality
from speech_to_speech.bench.stats import summarize
from speech_to_speech.cache import cache_root
from speech_to_speech.client.tools import ToolModule, load_tool_module
from speech_to_speech.testing.realtime_client import RealtimeTestClient

log = logging.getLogger(__name__)

DEFAULT_SET = Path(__file__).with_name("quality_set.json")
# Sets shipped with the package, by the name `--set` takes: everyday questions are held out from the
# quality set, so that what is tuned on one is checked on the other.
PACKAGED_SETS = {"quality": DEFAULT_SET, "everyday": Path(__file__).with_name("everyday_set.json")}
DEFAULT_TOOL_MODULE = "speech_to_speech.bench.quality_tools"
LATENCY = "end_of_speech_to_first_audio_ms"
LEAD_SILENCE_S = 0.3
VOICED_S = (0.3, 15.0)  # every spoken turn lies within these bounds


@dataclass(frozen=True)
class QualityConfig:
    request_set: Path | None = None  # default: the packaged set
    requests: int | None = None  # the first N requests only
    tool_module: str = DEFAULT_TOOL_MODULE
    warmup: int = 1  # requests asked first and not counted
    chunk_ms: int = 100
    timeout_s: float = 120.0


def set_path(name_or_path: str) -> Path:
    """A packaged set's name (``quality``, ``everyday``) as its file; anything else is a set file's path."""
    return PACKAGED_SETS.get(name_or_path, Path(name_or_path))


def _set_name(path: Path) -> str:
    """What a result records of its set: a packaged set's name (no path of the machine it ran on), else the path."""
    return next((name for name, packaged in PACKAGED_SETS.items() if packaged == path), str(path))


def load_set(path: Path | None = None) -> list[dict[str, Any]]:
    """The requests of a set file, checked: unique names, turns, and one kind of check each."""
    raw = json.loads((path or DEFAULT_SET).read_text())
    requests: list[dict[str, Any]] = raw["requests"]
    names = [r["name"] for r in requests]
    problems = [f"{n}: the name is used twice" for n in sorted({n for n in names if names.count(n) > 1})]
    for request in requests:
        if not request.get("turns"):
            problems.append(f"{request['name']}: no turns")
        if not any(key in request for key in ("expect", "check", "call")):
            problems.append(f"{request['name']}: nothing to check")
    if problems:
        raise ValueError(f"{path or DEFAULT_SET}: " + "; ".join(problems))
    return requests


def _synthesize(texts: list[str], rate: int) -> list[audio.Samples]:
    return audio.synthesize(texts, rate)  # looked up at call time, so a test can stand in for the voice


def turn_clips(requests: list[dict[str, Any]], cache_dir: Path | None = None) -> dict[str, list[audio.Speech]]:
    """Every turn of every request as a clip (synthesised once, then read from the cache), by request."""
    spoken = corpus.Corpus(
        requests=tuple(corpus.Request(f"{r['name']}-{i}", text, (corpus.Segment(text, 0),))
                       for r in requests for i, text in enumerate(r["turns"])),
        voiced_s=VOICED_S, max_pause_ms=0)
    folder = cache_dir or cache_root() / "bench" / "quality"
    clips = iter(corpus.clips(spoken, cache_dir=folder, synthesize=_synthesize))
    return {r["name"]: [next(clips) for _ in r["turns"]] for r in requests}


def _calls(done: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in done["response"].get("output") or [] if item.get("type") == "function_call"]


async def _run_tools(client: RealtimeTestClient, calls: list[dict[str, Any]], tools: ToolModule,
                     timeout_s: float) -> str:
    """Answer the calls with the module's results and ask for the spoken follow-up: what it said."""
    for call in calls:
        parsed = Call.parse(call.get("name", ""), call.get("arguments") or "{}")
        result = tools.execute_tool(parsed.name, parsed.arguments)
        if inspect.isawaitable(result):
            result = await result
        await client.send("conversation.item.create", item={
            "type": "function_call_output", "call_id": call.get("call_id"), "output": json.dumps(result)})
    start = len(client.received)
    await client.send("response.create")
    done = await client.wait_for("response.done", timeout_s)
    return turn(client.received[start:], str(response_id(done))).transcript


async def ask_request(url: str, request: dict[str, Any], clips: list[audio.Speech], tools: ToolModule,
                      clock: Clock, config: QualityConfig) -> dict[str, Any]:
    """Say the request's turns in one fresh session: the scored sample of its last turn, each turn timed."""
    fields: dict[str, Any] = {"tools": tools.tools} if request.get("tools") else {}
    turns: list[dict[str, Any]] = []
    follow_up = ""
    async with live_mic(url, audio.RATE, chunk_ms=config.chunk_ms, timeout=config.timeout_s,
                        lead_s=LEAD_SILENCE_S, **fields) as (client, mic):
        calls: list[dict[str, Any]] = []
        for clip in clips:
            said, answered = await ask(client, mic, clip, config.timeout_s)
            calls = _calls(answered.done.event)
            timed = latency_sample(answered, said.last_voiced_sent, clock) if said.last_voiced_sent else {}
            turns.append({"said": clip.text, "heard": answered.heard, "reply": answered.transcript,
                          "status": answered.status, "calls": [{"name": c.get("name"), "arguments": c.get("arguments")}
                                                               for c in calls], LATENCY: timed.get(LATENCY)})
        if calls:
            follow_up = await _run_tools(client, calls, tools, config.timeout_s)
    last = turns[-1]
    verdict = score(request, last["reply"], [Call.parse(c["name"] or "", c["arguments"] or "{}")
                                             for c in last["calls"]])
    sample = {"request": request["name"], "category": request["category"], **asdict(verdict), "turns": turns}
    if follow_up or calls:
        sample["follow_up"] = follow_up
        sample["follow_up_ok"] = follow_up_ok(request, follow_up) if verdict.calls_right else None
    return sample


async def run(target: Any, config: QualityConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """(summary, samples, config as recorded) of a quality run."""
    requests = load_set(config.request_set)[: config.requests]
    clips = turn_clips(requests)
    tools = load_tool_module(config.tool_module)
    clock = Clock.now()
    for request in requests[: config.warmup]:
        await target.wait_idle()
        await ask_request(target.ws_url, request, clips[request["name"]], tools, clock, config)
    samples = []
    for request in requests:
        await target.wait_idle()
        sample = await ask_request(target.ws_url, request, clips[request["name"]], tools, clock, config)
        log.info("%s: %s (%r)", request["name"], "right" if sample["correct"] else "wrong",
                 sample["turns"][-1]["reply"])
        samples.append(sample)
        await asyncio.sleep(0)
    summary = {**summarize_quality(samples),
               LATENCY: summarize(t[LATENCY] for s in samples for t in s["turns"])}
    recorded = {**{k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
                "request_set": _set_name(config.request_set or DEFAULT_SET),
                "instructions": None if target.settings is None else target.settings.llm.init_chat_prompt}
    return summary, samples, recorded
