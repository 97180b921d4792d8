"""``bench tools``: spoken requests that need a tool, over MCP and function tools, through a running server.

Each request of ``tools_set.json`` is spoken by hibari (cached, like the
quality set) into a fresh session whose tools are the ones the model has
never seen (:mod:`tools_offered`): the time server's and two of our MCP
server's, served here over streamable HTTP and named by URL in
``session.update``, so the server lists and calls them itself; and
``fetch``, a function tool this client answers after ``slow_tool_s`` (3 s
by default: a slow tool). Every request is asked twice, preambles off
(``preamble_after_ms: null``) and on (the server's default), and timed from
the end of speech: to the first audio of any kind, to the first audio of
the answer that carries the tool's result, and the longest silence the user
hears in between. The server's own phrases (the preamble, the holding
phrases after it) are not the result: the result is the first audio of
the answer's words, timed when it arrives and when a listener who plays
what came before it first hears it. ``--model-only`` asks the written requests of the LLM
alone in this process instead (:mod:`tool_calls`): precision and recall
without a voice or a server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.bench import audio
from speech_to_speech.bench.events import AUDIO_DELTA, Received, audio_ms, response_id
from speech_to_speech.bench.mic import live_mic
from speech_to_speech.bench.quality import turn_clips
from speech_to_speech.bench.stats import summarize
from speech_to_speech.bench.tool_calls import SET_PATH, expected_call, load_requests, split_summaries
from speech_to_speech.bench.tools_offered import FETCH_TOOL, OUR_TOOLS
from speech_to_speech.bench.tools_score import calls_in_output, judge, longest_silence_ms, schema_defaults
from speech_to_speech.cache import cache_root
from speech_to_speech.realtime.tools.preamble import HOLDING, PHRASES
from speech_to_speech.testing.mcp_server import serving, time_server, tools_server
from speech_to_speech.testing.realtime_client import RealtimeTestClient

log = logging.getLogger(__name__)

MODES = {"no_preamble": None, "preamble": "default"}  # preamble_after_ms: null, or left to the server
LEAD_SILENCE_S = 0.3
FIRST_AUDIO = "end_of_speech_to_first_audio_ms"
RESULT_AUDIO = "end_of_speech_to_spoken_result_ms"
RESULT_HEARD = "end_of_speech_to_result_heard_ms"
LONGEST_SILENCE = "longest_silence_ms"
HELD = "holding_phrases"
TIMED = (FIRST_AUDIO, RESULT_AUDIO, RESULT_HEARD, LONGEST_SILENCE)
# What the server says of its own while the user waits, in any language: never the result.
SERVER_PHRASES = {text for table in (PHRASES, HOLDING) for texts in table.values() for text in texts}
HOLDING_PHRASES = {text for texts in HOLDING.values() for text in texts}
TRANSCRIPT_DELTA = "response.output_audio_transcript.delta"


@dataclass(frozen=True)
class ToolsConfig:
    request_set: Path = SET_PATH
    requests: int | None = None  # the first N requests only
    modes: tuple[str, ...] = tuple(MODES)
    slow_tool_s: float = 3.0  # how long the client takes to answer a fetch
    chunk_ms: int = 100
    timeout_s: float = 120.0


def page_text(url: str) -> str:
    """What the client's fetch answers: a fixed page (no network here), named after the URL asked for."""
    return json.dumps({"url": url, "content": f"# {url}\nThis page says: the service is up, and the news of the "
                                              "day is that the library opens at nine."})


@contextmanager
def mcp_tools() -> Iterator[list[dict[str, Any]]]:
    """The session's tools: our two MCP servers over loopback HTTP for the run, and the fetch function tool."""
    with ExitStack() as stack:
        clock = stack.enter_context(serving(time_server()))
        ours = stack.enter_context(serving(tools_server()))
        yield [{"type": "mcp", "server_label": "time", "server_url": clock, "require_approval": "never"},
               {"type": "mcp", "server_label": "tools", "server_url": ours, "allowed_tools": list(OUR_TOOLS),
                "require_approval": "never"},
               FETCH_TOOL]


def _audio(log_: list[Received], rid: str, *, answer_only: bool = False) -> list[tuple[float, float]]:
    """(arrival, seconds) of response ``rid``'s audio; ``answer_only``: of the model's words alone, without
    the server's phrases (each is a clause of its own, its transcript delta just before its audio)."""
    clause, deltas = "", []
    for entry in log_:
        event = entry.event
        if event.get("response_id") != rid:
            continue
        if event.get("type") == TRANSCRIPT_DELTA:
            clause = str(event.get("delta") or "")
        elif event.get("type") == AUDIO_DELTA and not (answer_only and clause.strip() in SERVER_PHRASES):
            deltas.append((entry.at, audio_ms(event) / 1000.0))
    return deltas


def _result_audio_after(log_: list[Received], rid: str) -> float | None:
    """When the first audio of response ``rid``'s answer after its MCP call completed arrived."""
    done = next((e.at for e in log_ if e.event.get("type") == "response.mcp_call.completed"
                 and e.event.get("response_id", rid) == rid), None)
    if done is None:
        return None
    return next((at for at, _ in _audio(log_, rid, answer_only=True) if at >= done), None)


def heard_at(deltas: list[tuple[float, float]], arrival: float) -> float:
    """When a listener who plays each delta on arrival, or once the one before has played out, starts to hear
    the delta that arrived at ``arrival`` (later than that when the server's phrases still play)."""
    play_end = -math.inf
    for at, seconds in sorted(deltas):
        if at >= arrival:
            break
        play_end = max(play_end, at) + seconds
    return max(play_end, arrival)


async def _answer_fetches(client: RealtimeTestClient, output: list[dict[str, Any]], slow_s: float) -> bool:
    """Answer the response's function calls after ``slow_s`` and ask for the spoken answer; False: none."""
    calls = [item for item in output if item.get("type") == "function_call"]
    if not calls:
        return False
    await asyncio.sleep(slow_s)
    for call in calls:
        try:
            url = str(json.loads(call.get("arguments") or "{}").get("url", ""))
        except (json.JSONDecodeError, AttributeError):
            url = ""
        await client.send("conversation.item.create", item={
            "type": "function_call_output", "call_id": call.get("call_id"), "output": page_text(url)})
    await client.send("response.create")
    return True


async def ask_request(url: str, request: dict[str, Any], clip: audio.Speech, tools: list[dict[str, Any]],
                      mode: str, config: ToolsConfig) -> dict[str, Any]:
    """Say the request in a fresh session; its calls scored, and the silence and the spoken result timed."""
    fields: dict[str, Any] = {"tools": tools}
    if MODES[mode] is None:
        fields["preamble_after_ms"] = None
    async with live_mic(url, audio.RATE, chunk_ms=config.chunk_ms, timeout=config.timeout_s,
                        lead_s=LEAD_SILENCE_S, **fields) as (client, mic):
        start = len(client.received)
        said = mic.say(clip)
        done = await client.wait_for("response.done", config.timeout_s)
        output = list(done["response"].get("output") or [])
        first_rid = str(response_id(done))
        answered = await _answer_fetches(client, output, config.slow_tool_s)
        answer_rid = first_rid
        if answered:
            follow = await client.wait_for("response.done", config.timeout_s)
            answer_rid = str(response_id(follow))
        log_ = client.received[start:]
    end = said.last_voiced_sent or time.monotonic()
    deltas = _audio(log_, first_rid) + (_audio(log_, answer_rid) if answer_rid != first_rid else [])
    calls = calls_in_output(output)
    if answered:
        result_at = next((at for at, _ in _audio(log_, answer_rid, answer_only=True)), None)
    elif any(item.get("type") == "mcp_call" for item in output):
        result_at = _result_audio_after(log_, first_rid)
    else:
        result_at = None
    expected = expected_call(request)
    defaults = schema_defaults(FETCH_TOOL["parameters"]) if expected and expected.name == "fetch" else {}
    verdict = judge(calls, expected, defaults)

    def ms(at: float | None) -> float | None:
        return None if at is None else round((at - end) * 1000.0, 1)

    heard_until = [d for d in deltas if result_at is None or d[0] <= result_at]
    held = [e for e in log_ if e.event.get("type") == TRANSCRIPT_DELTA
            and str(e.event.get("delta") or "").strip() in HOLDING_PHRASES]
    transcripts = [e.event.get("transcript") or "" for e in log_
                   if e.event.get("type") == "response.output_audio_transcript.done"]
    heard = [e.event.get("transcript") or "" for e in log_
             if e.event.get("type") == "conversation.item.input_audio_transcription.completed"]
    return {"request": request["name"], "split": request["split"], "mode": mode, "said": request["text"],
            "heard": heard[-1] if heard else "", "expected": request.get("expect"),
            "calls": [asdict(c) for c in calls], "verdict": asdict(verdict) | {"correct": verdict.correct},
            "reply": " / ".join(t for t in transcripts if t),
            FIRST_AUDIO: ms(min((at for at, _ in deltas), default=None)), RESULT_AUDIO: ms(result_at),
            RESULT_HEARD: ms(None if result_at is None else heard_at(deltas, result_at)),
            LONGEST_SILENCE: longest_silence_ms(end, heard_until), HELD: len(held), "verdict_obj": verdict}


def summarise_run(samples: list[dict[str, Any]], modes: tuple[str, ...]) -> dict[str, Any]:
    """Calls scored over the first mode's samples (the model's calls do not depend on the preamble), and each
    mode's timings: over all requests, and over those that called fetch, the 3 s tool."""
    scored = [s for s in samples if s["mode"] == modes[0]]
    summary: dict[str, Any] = {"calls": split_summaries(scored)}
    for mode in modes:
        of_mode = [s for s in samples if s["mode"] == mode]
        slow = [s for s in of_mode if any(c["name"] == "fetch" for c in s["calls"])]
        summary[mode] = {
            "agreement_with_first_mode": sum(s["verdict"]["correct"] for s in of_mode),
            **{field: summarize(s[field] for s in of_mode) for field in TIMED},
            HELD: sum(s[HELD] for s in of_mode),
            "slow_tool": {field: summarize(s[field] for s in slow) for field in TIMED},
        }
    return summary


async def run(target: Any, config: ToolsConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    requests = load_requests(config.request_set)[: config.requests]
    clips = turn_clips([{"name": r["name"], "turns": [r["text"]]} for r in requests],
                       cache_dir=cache_root() / "bench" / "tools")
    samples = []
    with mcp_tools() as tools:
        for request in requests:
            for mode in config.modes:
                await target.wait_idle()
                sample = await ask_request(target.ws_url, request, clips[request["name"]][0], tools, mode, config)
                log.info("%s %s: %s %s", request["name"], mode, sample["calls"], sample["reply"])
                samples.append(sample)
    summary = summarise_run(samples, config.modes)
    for sample in samples:
        del sample["verdict_obj"]
    recorded = {**{k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
                "request_set": config.request_set.name, "tools": [t.get("server_label") or t.get("name")
                                                                  for t in tools],
                "instructions": None if target.settings is None else target.settings.llm.init_chat_prompt}
    return summary, samples, recorded
