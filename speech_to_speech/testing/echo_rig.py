"""A client whose microphone hears its own speaker: the test rig of echo cancellation.

It streams a spoken request in real time (20 ms appends, like a live
microphone) and plays every audio delta it receives as a speaker would: from
when it arrives, after what it has queued, at real time, stopped when the
reply is cut off. Whatever the speaker plays reaches the microphone through a
simulated :class:`~speech_to_speech.testing.room.Room` and is mixed into what
the rig sends next. Without echo cancellation the assistant hears itself.
"""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from speech_to_speech.protocol import Event
from speech_to_speech.testing.client_audio import decode_audio, encode_audio
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.room import Room

CHUNK_MS = 20
TRANSCRIBED = "conversation.item.input_audio_transcription.completed"
INTERRUPTION_SETTLE_S = 6.0  # the longest an interruption's transcript is waited for, after it ends


@dataclass
class Speaker:
    """What the client's speaker plays, on the microphone's sample clock.

    ``buffer_ms``: a reply starts playing that long after its first audio arrives (a jitter buffer).
    """

    rate: int
    buffer_ms: int = 0
    timeline: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, np.float32))
    cursor: int = 0  # where the queued audio ends
    # (response, item): where each run of its audio plays, (start, length); a run ends where the speaker ran dry
    items: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=dict)

    def queue(self, samples: npt.NDArray[np.float32], now: int, item: tuple[str, str] = ("", "")) -> None:
        start = max(self.cursor, now if self.cursor > now else now + self.buffer_ms * self.rate // 1000)
        runs = self.items.setdefault(item, [])
        if runs and sum(runs[-1]) == start:
            runs[-1] = (runs[-1][0], runs[-1][1] + len(samples))
        else:
            runs.append((start, len(samples)))  # after a gap: the silence played is not the item's audio
        end = start + len(samples)
        if end > len(self.timeline):
            self.timeline = np.concatenate([self.timeline, np.zeros(end - len(self.timeline), np.float32)])
        self.timeline[start:end] = samples
        self.cursor = end

    def stop(self, now: int) -> None:
        """Playback cleared: nothing past ``now`` plays."""
        self.timeline[now:] = 0.0
        self.cursor = min(self.cursor, now)
        self.items = {key: [(start, min(length, now - start)) for start, length in runs if start < now]
                      for key, runs in self.items.items()}

    def played_ms(self, now: int) -> list[tuple[str, str, int]]:
        """(response, item, ms of its audio played) of every item begun by ``now``: what ``playback.ack``
        says (the packaged client counts the samples it played, not the time since an item began)."""
        return [(response, item, sum(min(length, now - start) for start, length in runs if start <= now)
                 * 1000 // self.rate)
                for (response, item), runs in self.items.items() if runs and runs[0][0] <= now]


@dataclass(frozen=True)
class Interruption:
    """The user talking over the answer: ``samples`` once ``after_ms`` of its audio has played (a stall, the
    speaker run dry while the server is still making the answer, plays none: a person talks over what they
    hear, and said into a stall it was not over the echo at all). An answer stopped before then (a reply taken
    back as the user went on with the request) is not the one: they talk over the next, as far into it."""

    after_ms: float
    samples: npt.NDArray[np.float32]
    voiced_start: int = 0  # the first voiced sample of ``samples``
    voiced_end: int | None = None  # and the end of its last (None: its end)


@dataclass
class EchoRun:
    """What one spoken request got while the rig's microphone heard the answer."""

    events: list[Event]
    answer_started_at: int | None  # the index in ``events`` of the first audio delta
    interruption_voiced_at: float | None = None  # time.monotonic() when its first voiced sample was sent
    # whether the speaker still had the answer to play at that sample (an answer made faster than it is spoken
    # has its response.done long before it has played)
    playing_when_voiced: bool = False
    # where the interruption's voice ends in the session's input audio: speech that begins later is not the user's
    interruption_end_ms: float | None = None

    def of_type(self, kind: str, *, after_answer: bool = False) -> list[Event]:
        """The events of ``kind``; ``after_answer``: only those from the first audio delta on."""
        if after_answer and self.answer_started_at is None:
            return []
        start = self.answer_started_at or 0 if after_answer else 0
        return [e for e in self.events[start:] if e.get("type") == kind]

    def speech_started_at(self, received_at: list[float]) -> list[float]:
        """When each ``input_audio_buffer.speech_started`` from the first audio delta on was read (``received_at``:
        when each event was)."""
        return [at for at, _ in self.speech_started(received_at)]

    def speech_started(self, received_at: list[float]) -> list[tuple[float, int]]:
        """Each ``input_audio_buffer.speech_started`` from the first audio delta on: when it was read, and where
        the speech began in the session's input audio (``audio_start_ms``; the rig's first sample is at 0)."""
        start = self.answer_started_at or 0
        return [(at, int(event.get("audio_start_ms", -1)))
                for event, at in zip(self.events[start:], received_at[start:], strict=True)
                if event.get("type") == "input_audio_buffer.speech_started"]

    @property
    def user_transcripts(self) -> list[str]:
        return [e["transcript"] for e in self.of_type("conversation.item.input_audio_transcription.completed")]

    @property
    def response_statuses(self) -> list[str]:
        return [e["response"]["status"] for e in self.of_type("response.done")]


def request_went_on(audio_start_ms: int, request_end_ms: float | None) -> bool:
    """A ``speech_started`` whose speech began before the request's last voiced sample is the user going on with
    the request (the answer began in a pause of it, and was taken back), not the echo heard as the user: the echo
    reaches the microphone only after the answer's first audio, which comes after the request ends."""
    return request_end_ms is not None and 0 <= audio_start_ms < request_end_ms


def _echo_window(room: Room, speaker: Speaker, start: int, length: int, rir: npt.NDArray[np.float32]) -> np.ndarray:
    """What the microphone hears of the speaker over [start, start + length)."""
    delay = room.delay_ms * room.rate // 1000
    first = start - delay - len(rir) + 1
    padded = np.zeros(length + len(rir) - 1, np.float32)
    lo, hi = max(first, 0), min(first + len(padded), len(speaker.timeline))
    if hi > lo:
        padded[lo - first:hi - first] = speaker.timeline[lo:hi]
    return np.convolve(padded, rir, mode="valid").astype(np.float32)


async def speak_beside_speaker(client: RealtimeTestClient, speech: npt.NDArray[np.float32], rate: int, room: Room,
                               *, listen_s: float = 12.0, settle_s: float = 1.5,
                               interruption: Interruption | None = None, buffer_ms: int = 0,
                               ack_every_ms: int | None = None) -> EchoRun:
    """Say ``speech`` (at ``rate``, the session's input rate), then keep the microphone open for up to
    ``listen_s`` while the answer plays, until ``settle_s`` after the last response ended; say
    ``interruption`` over the answer if given. ``buffer_ms``: the speaker's jitter buffer;
    ``ack_every_ms``: send ``playback.ack`` that often, as the packaged client does."""
    assert room.rate == rate, "the room runs at the session's audio rate"
    rir = room.impulse_response()
    speaker = Speaker(rate, buffer_ms)
    acked: dict[tuple[str, str], int] = {}
    step = rate * CHUNK_MS // 1000
    noise = room.noise(int((len(speech) / rate + listen_s + 1) * rate))
    seen = len(client.received)
    answer_started: int | None = None
    done_at: float | None = None
    position = 0
    interrupt_from: int | None = None  # where the interruption starts, once the answer is playing
    answer_heard = 0  # samples of the answer played before the interruption starts
    interruption_voiced_at: float | None = None
    playing_when_voiced = False
    interruption_end_ms: float | None = None
    spoke_at: float | None = None  # when the last chunk of the interruption was sent
    transcribed_after = False  # a user transcript came after the interruption began
    started = time.monotonic()
    while True:
        for received in client.received[seen:]:
            event = received.event
            kind = event.get("type")
            if kind == "response.output_audio.delta":
                if answer_started is None:
                    answer_started = seen
                speaker.queue(decode_audio(event["delta"]).astype(np.float32) / 32768.0, position,
                              (event["response_id"], event["item_id"]))
            elif kind in ("output_audio_buffer.cleared", "input_audio_buffer.speech_started") or (
                    kind == "response.done" and event["response"]["status"] == "cancelled"):
                speaker.stop(position)  # a client that clears playback on speech over the answer
                if interrupt_from is None or position < interrupt_from:
                    # stopped before the user spoke (taken back: they went on with the request): they talk over
                    # the answer that follows, as far into it, not into its first moments
                    interrupt_from, answer_heard = None, 0
            if kind == "response.done":
                done_at = time.monotonic()
            if kind == TRANSCRIBED and interrupt_from is not None and position > interrupt_from:
                transcribed_after = True
            seen += 1
        if interruption is not None and interrupt_from is None and speaker.cursor > position:  # (not run dry)
            if answer_heard >= interruption.after_ms * rate / 1000:
                interrupt_from = position
            else:
                answer_heard += step
        user = speech[position:position + step]
        chunk = np.zeros(step, np.float32)
        chunk[:len(user)] = user
        if interruption is not None and interrupt_from is not None and position + step > interrupt_from:
            offset = max(0, position - interrupt_from)
            words = interruption.samples[offset:offset + step - max(0, interrupt_from - position)]
            at = max(0, interrupt_from - position)
            chunk[at:at + len(words)] += words
            voiced = interrupt_from + interruption.voiced_start
            if interruption_voiced_at is None and position <= voiced < position + step:
                interruption_voiced_at = time.monotonic()
                playing_when_voiced = speaker.cursor > voiced
                voiced_end = len(interruption.samples) if interruption.voiced_end is None else interruption.voiced_end
                interruption_end_ms = (interrupt_from + voiced_end) * 1000.0 / rate
            talking_over = interrupt_from + len(interruption.samples) > position
        else:
            talking_over = False
        chunk += _echo_window(room, speaker, position, step, rir) + noise[position:position + step]
        payload = base64.b64encode(encode_audio(np.clip(chunk, -1.0, 1.0))).decode("ascii")
        await client.send("input_audio_buffer.append", audio=payload)
        position += step
        if ack_every_ms and position % (rate * ack_every_ms // 1000) < step:
            for response_id, item_id, played in speaker.played_ms(position):
                if played > acked.get((response_id, item_id), 0):
                    acked[(response_id, item_id)] = played
                    await client.send("playback.ack", response_id=response_id, item_id=item_id, played_ms=played)
        elapsed = time.monotonic() - started
        talking = position < len(speech) or speaker.cursor > position or talking_over
        if talking_over:
            spoke_at = time.monotonic()
        # an interruption's turn ends after it does (its silence, then the STT): wait for its transcript too
        waiting = interruption is not None and not transcribed_after and (
            spoke_at is None or time.monotonic() - spoke_at < INTERRUPTION_SETTLE_S)
        if (position > len(speech) and not talking and not waiting and done_at is not None
                and time.monotonic() - done_at > settle_s):
            break
        if elapsed > len(speech) / rate + listen_s:
            break
        await asyncio.sleep(max(0.0, position / rate - elapsed))  # real time, without drift
    return EchoRun([r.event for r in client.received], answer_started, interruption_voiced_at, playing_when_voiced,
                   interruption_end_ms)
