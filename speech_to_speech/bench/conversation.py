"""``bench conversation``: a whole conversation in one session, each turn as fast and as right as the first?

Each scripted conversation (:mod:`conversation_script`) is spoken turn by
turn in ONE session, streamed like a live microphone in real time with server
VAD on, as ``bench turns`` speaks its requests. The user listens to every
answer before speaking again: after the answer's ``response.done`` (and
nothing else open), they wait until its audio has played out — its length
after its first delta was read, as a client playing on arrival hears it —
then leave a short ``gap_s`` and say the next turn. A turn with no answer is
given up after ``settle_s`` of quiet.

Per turn: end of speech (the chunk holding the last voiced sample) -> the
answer's first audio delta read, the stage marks as ``bench turns`` reports
them (and every mark the server sent, relative to the end of speech), the
prompt tokens the LLM read for the answer (``usage.input_tokens`` less
``input_token_details.cached_tokens``), what the server heard, the answer's
transcript, and whether it is right by the turn's rule. The summary is
:mod:`conversation_summary`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from speech_to_speech.bench import audio, corpus
from speech_to_speech.bench.conversation_script import DEFAULT_SCRIPT as DEFAULT_CORPUS
from speech_to_speech.bench.conversation_script import (
    Conversation,
    ScriptedTurn,
    chosen,
    clips,
    load_script,
)
from speech_to_speech.bench.conversation_summary import summarize_conversations
from speech_to_speech.bench.events import Clock, first_sound, hops, prompt_tokens, turn
from speech_to_speech.bench.mic import FINISHED, PacedMic, Said, live_mic
from speech_to_speech.bench.outcome import Outcome, Response, outcome, quiet
from speech_to_speech.bench.target import Target
from speech_to_speech.bench.turns import LATENCY, SESSION_ERRORS
from speech_to_speech.testing.realtime_client import RealtimeTestClient, Received

log = logging.getLogger(__name__)

LEAD_SILENCE_S = 0.3  # the stream is live before the first word, as a microphone's is
POLL_S = 0.05  # how often the listener looks at the log (event times are their read times, not this)


@dataclass(frozen=True)
class ConversationConfig:
    corpus: Path | None = None  # default: the packaged conversations
    conversations: int | None = None  # the first N conversations only
    turns: int | None = None  # the first N turns of each
    warmup: int = 1  # turns of the first conversation said first, in a session of their own, not counted
    chunk_ms: int = 20
    gap_s: float = 0.6  # the user's pause after the answer played out, before the next turn
    settle_s: float = 1.5  # a turn with no answer is over after this long with nothing open and nothing read
    timeout_s: float = 60.0


def answer_of(result: Outcome, end_of_speech: float | None) -> Response | None:
    """The answer the user waited for: the first response that answered with audio read after their speech
    ended (a reply begun on a pause inside the turn is a false start, not the answer)."""
    if end_of_speech is None:
        return None
    return next((r for r in result.responses if r.answered and (r.first_audio_at or 0.0) >= end_of_speech), None)


async def hear_out(client: RealtimeTestClient, start: int, said: Said, config: ConversationConfig) -> str | None:
    """Wait until the user has heard the answer of the turn logged from ``start`` play out (or, with no
    answer, until the turn is quiet); what went wrong instead, if anything."""
    since = said.sent[FINISHED]
    deadline = since + config.timeout_s
    seen, played_until = -1, None
    while True:
        now = time.monotonic()
        events = client.received[start:]
        if quiet(events, since, now, 0.0):  # nothing open: is there an answer, and how long does it play?
            if len(events) != seen:  # decode the audio again only when something new was read
                seen = len(events)
                answer = answer_of(outcome(events), said.last_voiced_sent)
                played_until = None if answer is None else (answer.first_audio_at or 0.0) + answer.audio_ms / 1000.0
            if played_until is None and quiet(events, since, now, config.settle_s):
                return None
            if played_until is not None and now >= played_until:
                return None
        if client.close_code is not None:
            return f"the server closed the session (code {client.close_code})"
        if now > deadline:
            return f"the turn was still open {config.timeout_s:.0f} s after it was said"
        await asyncio.sleep(POLL_S)


def turn_sample(conversation: str, scripted: ScriptedTurn, said: Said, events: list[Received],
                problem: str | None) -> dict[str, Any]:
    """One turn as the results record it: what was said and heard, the answer, its latency, tokens, rightness."""
    result = outcome(events)
    end_of_speech = said.last_voiced_sent
    answer = answer_of(result, end_of_speech)
    reply = answer.transcript if answer is not None else ""
    sample: dict[str, Any] = {
        "conversation": conversation, "turn": scripted.number, "kind": scripted.kind, "text": scripted.text,
        **({"of_turn": scripted.of_turn} if scripted.of_turn is not None else {}),
        "heard": list(result.heard), "reply": reply, "answered": answer is not None,
        "right": scripted.rule.right(reply),
        "double": result.double, "taken_back": result.taken_back,
        "responses": [{"id": r.id, "status": r.status, "ending": r.ending, "audio_ms": round(r.audio_ms, 1),
                       "reply": r.transcript} for r in result.responses],
    }
    clock = Clock.now()
    if said.first_voiced_sent is not None:  # when (epoch ms) the chunk holding the first word left
        sample["speech_sent_at_ms"] = round(clock.epoch_ms(said.first_voiced_sent), 1)
    if answer is not None and end_of_speech is not None and answer.first_audio_at is not None:
        sample[LATENCY] = round((answer.first_audio_at - end_of_speech) * 1000.0, 2)
        # When a client playing from the first delta on had played the answer through (epoch ms).
        sample["answer_played_out_at_ms"] = round(clock.epoch_ms(answer.first_audio_at) + answer.audio_ms, 1)
        answered = turn(events, answer.id)
        marks = {**answered.marks, "end_of_speech": clock.epoch_ms(end_of_speech),
                 "first_audio_received": clock.epoch_ms(answer.first_audio_at)}
        sample.update(first_sound(sample[LATENCY], answered.lead_silence_ms))
        sample.update(hops(marks))
        # Every mark the server sent, in ms after the end of speech: the prompt's reading shows here too.
        sample["stage_marks_ms"] = {name: round(at - marks["end_of_speech"], 1)
                                    for name, at in sorted(answered.marks.items(), key=lambda mark: mark[1])}
        sample.update(prompt_tokens(answered.done.event))
    if problem is not None:
        sample["error"] = problem
    return sample


def unsaid_sample(conversation: str, scripted: ScriptedTurn, problem: str) -> dict[str, Any]:
    """A turn the session did not last to say: unanswered, and wrong where it is scored."""
    return {"conversation": conversation, "turn": scripted.number, "kind": scripted.kind, "text": scripted.text,
            "heard": [], "reply": "", "answered": False, "right": scripted.rule.right(""), "double": False,
            "taken_back": 0, "responses": [], "error": problem}


async def say_turn(client: RealtimeTestClient, mic: PacedMic, conversation: str, scripted: ScriptedTurn,
                   clip: audio.Speech, config: ConversationConfig) -> dict[str, Any]:
    """Say one turn, hear its answer out, pause as a person would: its sample."""
    start = len(client.received)
    said = mic.say(clip)
    try:
        await asyncio.wait_for(said.finished.wait(), len(clip.samples) / clip.rate + config.timeout_s)
        problem = await hear_out(client, start, said, config)
    except TimeoutError:
        problem = "the microphone could not send the turn in time"
    if problem is None:
        await asyncio.sleep(config.gap_s)
    return turn_sample(conversation, scripted, said, client.received[start:], problem)


async def converse(target: Target, conversation: Conversation, spoken: list[audio.Speech],
                   config: ConversationConfig) -> list[dict[str, Any]]:
    """Say every turn of ``conversation`` in one fresh session: a sample per turn (said or not)."""
    await target.wait_idle()
    samples: list[dict[str, Any]] = []
    problem = "the session ended"
    try:
        async with live_mic(target.ws_url, audio.RATE, chunk_ms=config.chunk_ms, timeout=config.timeout_s,
                            lead_s=LEAD_SILENCE_S) as (client, mic):
            for scripted, clip in zip(conversation.turns, spoken, strict=True):
                sample = await say_turn(client, mic, conversation.name, scripted, clip, config)
                log.info("%s turn %d: %s, %s ms, %s tokens read, %r", conversation.name, scripted.number,
                         {True: "right", False: "wrong", None: "not scored"}[sample["right"]],
                         sample.get(LATENCY), sample.get("prompt_tokens_read"), sample["reply"])
                samples.append(sample)
                if client.close_code is not None:
                    break
    except SESSION_ERRORS as error:
        problem = f"{type(error).__name__}: {error}"
    return samples + [unsaid_sample(conversation.name, t, problem) for t in conversation.turns[len(samples):]]


def recorded(config: ConversationConfig, conversations: tuple[Conversation, ...],
             spoken: dict[str, list[audio.Speech]], target: Target) -> dict[str, Any]:
    """The config as the result file records it: the flags, the clips said, the server's instructions."""
    return {
        **{key: str(value) if isinstance(value, Path) else value for key, value in asdict(config).items()},
        "corpus": str(config.corpus or DEFAULT_CORPUS),
        "conversations": [{"name": c.name, "turns": len(c.turns),
                           "clips": [corpus.describe(clip) for clip in spoken[c.name]]} for c in conversations],
        "instructions": None if target.settings is None else target.settings.llm.init_chat_prompt,
    }


async def run(target: Target, config: ConversationConfig
              ) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """(summary, samples, config as recorded) of a conversation run."""
    script = load_script(config.corpus)
    conversations = chosen(script, config.conversations, config.turns)
    spoken = clips(script, conversations)
    if config.warmup > 0:  # first-call costs of a fresh server, in a session of its own
        first = conversations[0]
        warm = Conversation(first.name, first.turns[: config.warmup])
        await converse(target, warm, spoken[first.name][: config.warmup], config)
    samples = []
    for conversation in conversations:
        samples += await converse(target, conversation, spoken[conversation.name], config)
    return summarize_conversations(samples), samples, recorded(config, conversations, spoken, target)
