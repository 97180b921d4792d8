"""``bench room``: an assistant in a real room. Is "yeah" heard as a listener? Does the television get answers?

Every part streams a live microphone in real time, in fresh sessions:

- **remarks**: the user asks for a long story; ``say_after_s`` into the audio
  of the answer to all of it (not of a reply begun at a pause inside the
  request and taken back) they say a listener word ("Yeah.", "Mm-hmm.", …). The answer must play
  on: not cancelled, no ``speech_started`` after the word, no answer of its own.
- **interruptions**: the same, with a real interruption ("Wait.", "Stop,
  stop. What time is it now?", …). The answer must stop: cancelled while it
  is made, or, all of it sent already, ``speech_started`` (on which clients
  stop playing) while it still plays. Timed from the start of the speech (the
  chunk holding its first voiced sample sent) to ``speech_started`` and to a
  cancelled ``response.done``.
- **background**: the user asks one question at their level; once it is
  answered, recorded human speech (:mod:`room_audio`) plays for
  ``background_s`` at each of ``background_db`` relative to the user, nobody
  addressing the assistant. Counted: responses begun during it.
- **requests**: a question first, then the room (talk at -20 dB and fan noise
  at 15 dB SNR) with requests said over it: each answered or not, and how many
  of its words the server heard.
- **echo_bargein**: the interruptions (and ``echo_human`` recorded sentences)
  said over the story while the microphone hears the speaker, the echo at each
  of ``echo_db`` relative to the user, with and without ``playback.ack``,
  the server's echo cancellation on (:mod:`echo_bargein`).
- **filters**: in this process, not over the wire: the CPU each microphone
  filter costs a session (:mod:`filter_cost`), on ``FILTER_AUDIO_S`` of the
  room's talk with the story playing into the microphone.

Words and voices are in :mod:`room_audio`. A trial whose answer had played
out before the user spoke (all of it sent, and played by a client playing it
as it came) is counted as missed, not judged.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio, echo_bargein, room_audio
from speech_to_speech.bench.bargein import LONG_ANSWER
from speech_to_speech.bench.events import AUDIO_DELTA, audio_deltas, first, of_type
from speech_to_speech.bench.filter_cost import filter_costs
from speech_to_speech.bench.human_speech import RATE as HUMAN_RATE
from speech_to_speech.bench.human_speech import human_clips
from speech_to_speech.bench.mic import Said, live_mic
from speech_to_speech.bench.stats import summarize
from speech_to_speech.bench.target import Target
from speech_to_speech.testing.realtime_client import RealtimeTestClient, Received, played_out_at
from speech_to_speech.testing.room import Room

RATE = room_audio.RATE
USER_TRANSCRIPT = "conversation.item.input_audio_transcription.completed"
FILTER_AUDIO_S = 20.0


@dataclass(frozen=True)
class RoomConfig:
    human_speech: Path  # pocketsphinx's test/data folder
    parts: tuple[str, ...] = ("remarks", "interruptions", "background", "requests", "echo_bargein", "filters")
    remarks: int | None = None  # the first N words of each voice (listener words, interruptions)
    user_db: float = -20.0  # the user's voiced level, dBFS
    background_s: float = 60.0
    background_db: tuple[float, ...] = (-20.0, -10.0)  # the room relative to the user
    noise_snr_db: float = 15.0  # the fan against the user's speech, for requests over the room
    say_after_s: float = 1.5  # into the answer's audio
    settle_s: float = 3.0  # after an answer: time for a reply of the remark's own to begin
    chunk_ms: int = 20
    timeout_s: float = 120.0
    overlap_policy: str | None = None  # the sessions' overlap_policy (None: the server's default)
    listener_words: tuple[str, ...] = room_audio.LISTENER_WORDS
    interruptions: tuple[str, ...] = room_audio.INTERRUPTIONS
    echo_db: tuple[float, ...] = (0.0, 6.0)  # the echo's voiced level at the microphone relative to the user
    echo_acks: tuple[bool, ...] = (False, True)  # with and without playback.ack
    echo_delay_ms: int = 150  # speaker to microphone
    echo_human: int = 2  # recorded sentences said over the echo besides the interruptions


def _fields(config: RoomConfig, **more: Any) -> dict[str, Any]:
    return {**({"overlap_policy": config.overlap_policy} if config.overlap_policy else {}), **more}


async def over_answer(target: Target, story: audio.Speech, said: audio.Speech, config: RoomConfig) -> dict[str, Any]:
    """Ask for a story; ``say_after_s`` into its audio, say ``said``; what happened to the story and after."""
    await target.wait_idle()
    async with live_mic(target.ws_url, RATE, chunk_ms=config.chunk_ms, timeout=config.timeout_s, lead_s=0.3,
                        **_fields(config, instructions=LONG_ANSWER)) as (client, mic):
        asked = mic.say(story)
        await asked.finished.wait()
        rid, first_audio_at = await _answer_to(client, asked, config.timeout_s)
        await asyncio.sleep(max(0.0, first_audio_at + config.say_after_s - time.monotonic()))
        start = len(client.received)
        spoken = mic.say(said)
        await client.wait_for(of_type("response.done", rid), config.timeout_s)
        await spoken.finished.wait()
        await asyncio.sleep(config.settle_s)
        log = list(client.received)
    return trial_of(log, start, rid, said.name, spoken.first_voiced_sent)


def trial_of(log: list[Received], start: int, rid: str, said: str, began: float | None) -> dict[str, Any]:
    """What came of words (``said``, their voice first sent at ``began``) said over the answer ``rid``, from
    the session's events (``log``, read from ``start`` on after the words were said)."""
    done = first(log, of_type("response.done", rid))
    assert done is not None
    after = log[start:]
    started = first(after, of_type("input_audio_buffer.speech_started"))
    decided = first(after, of_type("overlap.decision"))
    # Played out by then: all of it sent, and a client playing it as it came had played it all.
    played_until = played_out_at(audio_deltas(log, rid))
    status = done.event["response"]["status"]
    sample: dict[str, Any] = {
        "said": said, "status": status,
        "missed": began is None or played_until < began,  # the answer was over before the user spoke
        "speech_started": started is not None,
        # Cancelled while it was made, or all sent and still playing when speech_started told the client to stop.
        "stopped": status == "cancelled" or started is not None,
        "own_answers": len({e.event["response"]["id"] for e in after
                            if e.event.get("type") == "response.created" and e.event["response"]["id"] != rid}),
        "heard": [e.event.get("transcript") for e in after if e.event.get("type") == USER_TRANSCRIPT],
        "decision": {k: decided.event.get(k) for k in ("action", "reason")} | {
            "transcript": (decided.event.get("metadata") or {}).get("transcript")} if decided else None,
    }
    if began is not None and started is not None:
        sample["speech_to_speech_started_ms"] = round((started.at - began) * 1000, 1)
    if began is not None and sample["status"] == "cancelled" and done.at >= began:
        sample["speech_to_cancelled_ms"] = round((done.at - began) * 1000, 1)
    return sample


async def _answer_to(client: RealtimeTestClient, asked: Said, timeout_s: float) -> tuple[str, float]:
    """The answer to the whole request: the response of the first audio read after its last voice was sent,
    and when. A reply begun at a pause inside it ("... a lighthouse keeper" | "and a lost seagull.") was taken
    back when the user went on: its audio is not the answer's."""
    deadline = time.monotonic() + timeout_s
    while True:
        ended = asked.last_voiced_sent or 0.0
        read = next((r for r in client.received if r.at >= ended and r.event.get("type") == AUDIO_DELTA), None)
        if read is not None:
            return str(read.event["response_id"]), read.at
        if time.monotonic() > deadline:
            raise TimeoutError(f"no answer's audio within {timeout_s:.0f} s of the request")
        await asyncio.sleep(0.02)


async def in_the_room(target: Target, opening: audio.Speech, room: audio.Samples, requests: list[audio.Speech],
                      config: RoomConfig) -> dict[str, Any]:
    """Ask ``opening``; once answered, the room plays, then each request said over more of it (waiting for its
    answer): how many responses began, which requests were answered, what the server heard."""
    await target.wait_idle()
    async with live_mic(target.ws_url, RATE, chunk_ms=config.chunk_ms, timeout=config.timeout_s, lead_s=0.3,
                        **_fields(config)) as (client, mic):
        mic.say(opening)
        first_answer = (await client.wait_for("response.created", config.timeout_s))["response"]["id"]
        await client.wait_for(of_type("response.done", first_answer), config.timeout_s)
        start = len(client.received)
        await mic.say(audio.Speech("room", "", room, RATE, 0, len(room))).finished.wait()
        await _quiet(client.received, config)
        spoken = []
        for request in requests:
            spoken.append(mic.say(request))
            await spoken[-1].finished.wait()
            await _quiet(client.received, config)
        log = list(client.received)[start:]
    created = [e for e in log if e.event.get("type") == "response.created"]
    heard = [str(e.event.get("transcript") or "") for e in log if e.event.get("type") == USER_TRANSCRIPT]
    answered = [any(e.at > (r.first_voiced_sent or 0.0) for e in created) for r in spoken]
    return {"responses": len(created), "answered": answered, "heard": heard,
            "words_heard": [echo_bargein.share_heard(r.clip.text, heard) for r in spoken]}


async def _quiet(log: list[Any], config: RoomConfig) -> None:
    """Until no response is open and nothing was read for ``settle_s`` (at most ``timeout_s``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + config.timeout_s
    while loop.time() < deadline:
        await asyncio.sleep(0.1)
        kinds = [(e.event.get("type"), (e.event.get("response") or {}).get("id")) for e in log]
        open_ = {rid for kind, rid in kinds if kind == "response.created"} - {
            rid for kind, rid in kinds if kind == "response.done"}
        if not open_ and (not log or asyncio.get_running_loop().time() - _monotonic_of(log[-1]) >= config.settle_s):
            return


def _monotonic_of(entry: Any) -> float:
    # Received.at is time.monotonic(), the event loop's clock too.
    return float(entry.at)


async def run(target: Target, config: RoomConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    story = audio.speech("story", room_audio.STORY, audio.synthesize([room_audio.STORY], RATE)[0], RATE)
    story = _at(story, config.user_db)
    samples: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for part, texts in (("remarks", config.listener_words), ("interruptions", config.interruptions)):
        if part not in config.parts:
            continue
        clips = [_at(c, config.user_db) for c in room_audio.spoken(texts[:config.remarks])]
        trials = [{"part": part, **await over_answer(target, story, clip, config)} for clip in clips]
        samples += trials
        counted = [t for t in trials if not t["missed"]]
        summary[part] = {
            "trials": len(trials), "missed": len(trials) - len(counted),
            # Played on: not cut off (an answer may still end at its token limit) and nothing answered the words.
            "played_on": sum(not t["stopped"] and t["own_answers"] == 0 for t in counted),
            "stopped": sum(t["stopped"] for t in counted),
            "cancelled": sum(t["status"] == "cancelled" for t in counted),
            "speech_started": sum(t["speech_started"] for t in counted),
            "speech_to_speech_started_ms": summarize([t["speech_to_speech_started_ms"] for t in counted
                                                      if "speech_to_speech_started_ms" in t]),
        }
    opening = _at(audio.load_questions(None, 1, RATE)[0], config.user_db)
    talk = room_audio.room_talk(config.human_speech, config.background_s)
    if "background" in config.parts:
        for relative in config.background_db:
            result = await in_the_room(target, opening, room_audio.at_level(talk, config.user_db + relative), [],
                                       config)
            samples.append({"part": "background", "room_db": relative, "seconds": config.background_s, **result})
            summary[f"background {relative:+.0f} dB"] = {"seconds": config.background_s,
                                                          "responses": result["responses"]}
    if "requests" in config.parts:
        requests = [_at(q, config.user_db) for q in audio.load_questions(None, None, RATE)[1:4]]
        seconds = sum(len(r.samples) / RATE + 4.0 for r in requests) + 2.0
        room = room_audio.at_level(room_audio.room_talk(config.human_speech, seconds), config.user_db - 20.0)
        fan = room_audio.fan_noise(seconds)
        room = room + fan * 10 ** ((config.user_db - config.noise_snr_db) / 20) / np.sqrt(np.mean(np.square(fan)))
        spaced = [room_audio.mixed(r, room, i * RATE) for i, r in enumerate(requests)]
        result = await in_the_room(target, opening, room[: RATE * 2], spaced, config)
        samples.append({"part": "requests", **result})
        summary["requests"] = {"said": len(requests), "answered": sum(result["answered"]),
                               "words_heard": result["words_heard"]}
    if "echo_bargein" in config.parts:
        trials = await _over_echo(target, story, config)
        samples += trials
        for relative in config.echo_db:
            for acks in config.echo_acks:
                summary[f"echo_bargein {relative:+.0f} dB {'acks' if acks else 'no acks'}"] = echo_bargein.summary_of(
                    [t for t in trials if t["echo_db"] == relative and t["acks"] == acks])
    if "filters" in config.parts:
        # The room's talk with the story's voice playing over it: what each filter costs a session.
        talk16 = resample(room_audio.room_talk(config.human_speech, FILTER_AUDIO_S), RATE, PIPELINE_RATE)
        answer16 = np.resize(resample(story.samples, RATE, PIPELINE_RATE), len(talk16))
        summary["filters"] = filter_costs(talk16, answer16)
    return summary, samples, {**asdict(config), "human_speech": str(config.human_speech)}


async def _over_echo(target: Target, story: audio.Speech, config: RoomConfig) -> list[dict[str, Any]]:
    """The interruptions and recorded sentences said over the story's loud echo (the echo_bargein part)."""
    said = [_at(c, config.user_db) for c in room_audio.spoken(config.interruptions[:config.remarks])]
    said += [_at(audio.speech(f"human: {name}", words, resample(x, HUMAN_RATE, RATE), RATE), config.user_db)
             for name, words, x in human_clips(config.human_speech)[:config.echo_human]]
    trials = []
    for relative in config.echo_db:
        gain = echo_bargein.echo_gain(config.user_db, relative, config.echo_delay_ms, RATE)
        room = Room(delay_ms=config.echo_delay_ms, gain=gain, rate=RATE)
        for acks in config.echo_acks:
            for clip in said:
                result = await echo_bargein.barge_in_over_echo(
                    target, story, clip, room, acks=acks, after_s=config.say_after_s, timeout_s=config.timeout_s,
                    instructions=LONG_ANSWER)
                trials.append({"part": "echo_bargein", "echo_db": relative, "acks": acks, "room_gain": round(gain, 3),
                               **result})
    return trials


def _at(clip: audio.Speech, level_db: float) -> audio.Speech:
    return audio.Speech(clip.name, clip.text, room_audio.at_level(clip.samples, level_db), clip.rate, clip.start,
                        clip.end)
