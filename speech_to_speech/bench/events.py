"""Timing extraction from a client's event log: pure functions over ``Received`` events.

Client times are ``time.monotonic()`` seconds (when an event was read, when a
chunk was sent); the server's stage marks (the timings extension) are Unix
epoch milliseconds. :class:`Clock` converts between the two; both ends must
share a clock (the benches run on one machine, over loopback).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from speech_to_speech.audio.rates import WIRE_RATE
from speech_to_speech.protocol import TIMINGS_KEY, Event
from speech_to_speech.realtime.metrics import STAGE_HOPS
from speech_to_speech.testing.realtime_client import Received

AUDIO_DELTA = "response.output_audio.delta"
SOUND_LEVEL = 33  # PCM16 magnitude of -60 dBFS: quieter samples are silence
# End of speech -> the reply's first sound, for a client that plays each delta on arrival.
FIRST_SOUND = "end_of_speech_to_first_sound_ms"
# A turn's hops, from the client's end of speech to the first audio delta it read:
# (figure, from mark, to mark); "end_of_speech" and "first_audio_received" are client marks.
TURN_HOPS: tuple[tuple[str, str, str], ...] = (
    ("vad_ms", "end_of_speech", "vad_end_of_speech"),
    *((f"{stage}_ms", start, end) for stage, start, end in STAGE_HOPS),
    ("wire_ms", "first_audio_sent", "first_audio_received"),
)


@dataclass(frozen=True)
class Clock:
    """Converts this process's monotonic seconds to the server's epoch milliseconds."""

    offset_s: float

    @classmethod
    def now(cls) -> Clock:
        return cls(time.time() - time.monotonic())

    def epoch_ms(self, monotonic_s: float) -> float:
        return (monotonic_s + self.offset_s) * 1000.0


def response_id(event: Event) -> str | None:
    return event.get("response_id") or (event.get("response") or {}).get("id")


def first(log: Iterable[Received], match: Callable[[Event], bool]) -> Received | None:
    return next((entry for entry in log if match(entry.event)), None)


def of_type(kind: str, rid: str | None = None) -> Callable[[Event], bool]:
    """Events of ``kind`` (of response ``rid`` when given)."""
    return lambda event: event.get("type") == kind and (rid is None or response_id(event) == rid)


def audio_ms(event: Event, rate: int = WIRE_RATE) -> float:
    """Duration of the PCM16 audio in an ``output_audio.delta`` (decoded size, not the text's)."""
    return len(base64.b64decode(event.get("delta") or "")) / 2 * 1000.0 / rate


def leading_silence_ms(log: Iterable[Received], rid: str, rate: int = WIRE_RATE) -> float | None:
    """Milliseconds of response ``rid``'s audio before its first sound (-60 dBFS), None if it has none.

    A client that plays each delta as it arrives hears the reply start that
    long after its first delta: silence sent first is latency too.
    """
    silent = 0
    match = of_type(AUDIO_DELTA, rid)
    for entry in log:
        if not match(entry.event):
            continue
        pcm = np.frombuffer(base64.b64decode(entry.event.get("delta") or ""), dtype="<i2")
        loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) >= SOUND_LEVEL)
        if len(loud):
            return round((silent + int(loud[0])) * 1000.0 / rate, 2)
        silent += len(pcm)
    return None


def first_sound(first_audio_ms: float | None, lead_silence_ms: float | None) -> dict[str, float]:
    """The :data:`FIRST_SOUND` figure of a turn whose first audio came ``first_audio_ms`` after its end."""
    if first_audio_ms is None or lead_silence_ms is None:
        return {}
    return {FIRST_SOUND: round(first_audio_ms + lead_silence_ms, 2)}


def stage_marks(done: Event) -> dict[str, float]:
    """The timings extension's epoch-ms marks of a ``response.done``; empty without them."""
    metadata = (done.get("response") or {}).get("metadata") or {}
    raw = metadata.get(TIMINGS_KEY)
    if not raw:
        return {}
    return {name: float(value) for name, value in json.loads(raw).items()}


def prompt_tokens(done: Event) -> dict[str, int]:
    """Of a ``response.done``: the prompt's tokens, those the LLM found in its cache, and those it read.

    Read defensively: a backend that keeps no prompt cache reports 0 cached
    (or no details at all), and a response without usage gives nothing.
    """
    usage = (done.get("response") or {}).get("usage") or {}
    total = usage.get("input_tokens")
    if not isinstance(total, int) or isinstance(total, bool):
        return {}
    cached = (usage.get("input_token_details") or {}).get("cached_tokens")
    cached = cached if isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0 else 0
    return {"input_tokens": total, "cached_tokens": cached, "prompt_tokens_read": max(0, total - cached)}


def hops(marks: dict[str, float], hop_list: Sequence[tuple[str, str, str]] = TURN_HOPS) -> dict[str, float]:
    """Duration (ms) of every hop whose two marks are both present."""
    return {name: round(marks[end] - marks[start], 2)
            for name, start, end in hop_list if start in marks and end in marks}


def audio_deltas(log: Iterable[Received], rid: str) -> list[tuple[float, float]]:
    """``(read at, seconds of audio)`` of every audio delta of response ``rid``, in order."""
    match = of_type(AUDIO_DELTA, rid)
    return [(entry.at, audio_ms(entry.event) / 1000.0) for entry in log if match(entry.event)]


@dataclass(frozen=True)
class Underruns:
    count: int
    total_ms: float
    max_ms: float


def underruns(deltas: Sequence[tuple[float, float]]) -> Underruns:
    """Gaps a client playing in real time from the first delta would hear.

    ``deltas`` is ``(arrival, seconds of audio)`` in order. The player starts
    at the first arrival; a delta that arrives after the queued audio ran out
    is an underrun of that gap, and playback resumes from its arrival.
    """
    gaps: list[float] = []
    play_end: float | None = None
    for arrival, seconds in deltas:
        if play_end is not None and arrival > play_end:
            gaps.append(arrival - play_end)
            play_end = arrival
        play_end = (arrival if play_end is None else play_end) + seconds
    return Underruns(len(gaps), round(sum(gaps) * 1000.0, 2), round(max(gaps, default=0.0) * 1000.0, 2))


def audio_after(log: Iterable[Received], rid: str, after: float) -> float:
    """Milliseconds of response ``rid``'s audio read after monotonic time ``after``."""
    match = of_type(AUDIO_DELTA, rid)
    return round(sum(audio_ms(entry.event) for entry in log if match(entry.event) and entry.at > after), 2)


@dataclass(frozen=True)
class Turn:
    """What one response looked like from the client: the events that time it."""

    response_id: str
    status: str
    done: Received
    first_audio: Received | None
    lead_silence_ms: float | None  # the audio's silence before its first sound
    marks: dict[str, float]  # the server's, epoch ms
    transcript: str  # what the assistant said
    heard: str  # what the server transcribed of the user


def turn(log: Sequence[Received], rid: str) -> Turn:
    """The turn of response ``rid`` in ``log`` (which must include its ``response.done``)."""
    done = first(log, of_type("response.done", rid))
    if done is None:
        raise ValueError(f"no response.done for {rid} in the log")
    said = first(log, of_type("response.output_audio_transcript.done", rid))
    heard = [entry.event.get("transcript") or "" for entry in log
             if entry.event.get("type") == "conversation.item.input_audio_transcription.completed"]
    return Turn(
        response_id=rid,
        status=str(done.event["response"].get("status")),
        done=done,
        first_audio=first(log, of_type(AUDIO_DELTA, rid)),
        lead_silence_ms=leading_silence_ms(log, rid),
        marks=stage_marks(done.event),
        transcript=(said.event.get("transcript") or "") if said else "",
        heard=heard[-1] if heard else "",
    )


def latency_sample(entry: Turn, end_of_speech: float, clock: Clock) -> dict[str, Any]:
    """End of speech -> first audio delta read, and its hops, for one turn."""
    sample: dict[str, Any] = {"response_id": entry.response_id, "status": entry.status}
    marks = dict(entry.marks, end_of_speech=clock.epoch_ms(end_of_speech))
    if entry.first_audio is not None:
        marks["first_audio_received"] = clock.epoch_ms(entry.first_audio.at)
        sample["end_of_speech_to_first_audio_ms"] = round((entry.first_audio.at - end_of_speech) * 1000.0, 2)
        sample.update(first_sound(sample["end_of_speech_to_first_audio_ms"], entry.lead_silence_ms))
    sample.update(hops(marks))
    return sample
