"""``bench room``'s echo_bargein part: a user talking over the answer while the microphone hears the speaker loudly.

A client without its own echo cancellation (a robot, a kiosk) whose
microphone hears its speaker ``delay_ms`` late through a small room, with the
server's echo cancellation on (the session asks for the
``speech_to_speech.echo_cancellation`` extension). Per trial, in a fresh
session through the echo rig (:func:`speech_to_speech.bench.echo.speak`): ask
for a long story; ``say_after_s`` into its audio (of the answer that plays, where the first was
taken back as the user went on with the request) the user says an
interruption. The echo's voiced level at the microphone is set relative to the
user's (``echo_db``: 0 is as loud as the user), by scaling the room's path
against hibari's voice, the voice the server answers in. Each level runs with
and without ``playback.ack`` (clients that stream a raw microphone send none).

Counted per trial: whether the user was heard (``speech_started`` after the
chunk holding their first voiced sample), whether the answer was cancelled,
self-interruptions (``speech_started`` after the answer began and before the
user spoke: the echo heard as the user; one whose speech began within the
request is the user going on with it, counted apart; one whose speech began
after the interruption ended is the reply's echo heard as the user) and the share of the said words found
in the user transcripts. A trial whose answer had played out before the user
spoke is missed, not judged.
"""

from __future__ import annotations

import re
from typing import Any

from speech_to_speech.bench import audio, room_audio
from speech_to_speech.bench.echo import EchoConfig, speak
from speech_to_speech.bench.stats import summarize
from speech_to_speech.bench.target import Target
from speech_to_speech.testing.echo_rig import EchoRun, Interruption, request_went_on
from speech_to_speech.testing.room import Room

ACK_EVERY_MS = 100  # the packaged client's playback.ack interval, when acks are on
USER_TRANSCRIPT = "conversation.item.input_audio_transcription.completed"
# What the answer sounds like at the microphone: the level of the room's echo of it is measured on this.
SAMPLE_ANSWER = ("Once upon a time a lighthouse keeper lived alone on a rocky island. Every night he climbed "
                 "the stairs to light the lamp, and every morning he fed the seagulls that waited by his door.")


def echo_gain(user_db: float, echo_db: float, delay_ms: int, rate: int) -> float:
    """The room's direct-path amplitude that puts the echo of hibari's voice ``echo_db`` over ``user_db``."""
    answer = audio.synthesize([SAMPLE_ANSWER], rate)[0]
    unit = room_audio.voiced_level_db(Room(delay_ms=delay_ms, gain=1.0, rate=rate).echo_of(answer))
    return float(10 ** ((user_db + echo_db - unit) / 20))


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]", " ", text.lower()).split()


def share_heard(text: str, heard: list[str]) -> float:
    """The share of ``text``'s words found in the user transcripts the server sent."""
    said, got = words(text), set(words(" ".join(heard)))
    return round(sum(w in got for w in said) / max(1, len(said)), 3)


def judged(run: EchoRun, received_at: list[float], said: audio.Speech,
           request: audio.Speech | None = None) -> dict[str, Any]:
    """One trial's outcome from its events and when each was read; ``request``: what the user asked first (from
    the session's first input sample)."""
    voiced = run.interruption_voiced_at
    started = run.answer_started_at
    timed = list(zip(run.events, received_at, strict=True))
    done = next(((e, at) for e, at in timed if e.get("type") == "response.done"), None)
    ended = run.interruption_end_ms
    request_end_ms = None if request is None else request.end_ms
    after: list[float] = []  # the user heard
    reply_heard: list[float] = []  # begun after their voice ended: the reply's echo (or the cut answer's tail)
    went_on: list[float] = []  # begun within the request: the user going on with it
    before: list[float] = []  # before the user spoke: the echo heard as the user
    for at, start_ms in run.speech_started(received_at):
        if voiced is not None and at >= voiced:
            (reply_heard if ended is not None and start_ms > ended else after).append(at)
        elif started is not None:
            (went_on if request_went_on(start_ms, request_end_ms) else before).append(at)
    status = done[0]["response"]["status"] if done else None
    sample: dict[str, Any] = {
        "said": said.name, "status": status,
        # the answer had played out before the user spoke: nothing to talk over (its response.done may come
        # long before that, the answer made faster than it is spoken)
        "missed": started is None or voiced is None or not run.playing_when_voiced,
        "heard": bool(after),
        "self_interruptions": len(before),
        "self_interruption_ms_into_answer": [round((at - timed[started or 0][1]) * 1000) for at in before],
        "request_went_on": len(went_on),
        "reply_self_interruptions": len(reply_heard),
        "transcripts": [e.get("transcript") for e, at in timed if e.get("type") == USER_TRANSCRIPT
                        and voiced is not None and at >= voiced],
    }
    sample["words_heard"] = share_heard(said.text, sample["transcripts"])
    if request is not None:  # the request's words, a continuation after a pause included
        sample["request_words_heard"] = share_heard(request.text, [
            e.get("transcript") or "" for e, at in timed
            if e.get("type") == USER_TRANSCRIPT and (voiced is None or at < voiced)])
    if after and voiced is not None:
        sample["speech_to_speech_started_ms"] = round((after[0] - voiced) * 1000, 1)
    return sample


async def barge_in_over_echo(target: Target, story: audio.Speech, said: audio.Speech, room: Room, *,
                             acks: bool, after_s: float, timeout_s: float, instructions: str) -> dict[str, Any]:
    """Ask for ``story`` beside the speaker; ``after_s`` into the answer's audio say ``said``: what came of it."""
    config = EchoConfig(timeout_s=timeout_s, ack_every_ms=ACK_EVERY_MS if acks else None)
    interruption = Interruption(after_s * 1000.0, said.samples, said.start, said.end)
    run, received_at = await speak(target, story, room, config, cancel=True, instructions=instructions,
                                   interruption=interruption)
    return judged(run, received_at, said, request=story)


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def summary_of(trials: list[dict[str, Any]]) -> dict[str, Any]:
    counted = [t for t in trials if not t["missed"]]
    return {
        "trials": len(trials), "missed": len(trials) - len(counted),
        "heard": sum(t["heard"] for t in counted),
        "cancelled": sum(t["status"] == "cancelled" for t in counted),
        "runs_with_self_interruption": sum(bool(t["self_interruptions"]) for t in trials),
        "runs_with_request_went_on": sum(bool(t.get("request_went_on")) for t in trials),
        "runs_with_reply_self_interruption": sum(bool(t.get("reply_self_interruptions")) for t in trials),
        "words_heard_mean": _mean([t["words_heard"] for t in counted]),
        "request_words_heard_mean": _mean([t["request_words_heard"] for t in trials if "request_words_heard" in t]),
        "speech_to_speech_started_ms": summarize([t.get("speech_to_speech_started_ms") for t in counted]),
    }
