"""Assistant audio between the receive loop and the output device.

The receive loop ``feed``s PCM16 deltas at the server's rate; the device (a
PortAudio callback thread, or the WAV recorder's clock) ``read``s frames at
its own rate. Between them:
- a jitter buffer: a response starts playing once ``jitter_ms`` of it is
  buffered (or all of its audio has arrived), so network hiccups at the start
  of a reply do not stutter;
- a stateful resampler per output item (server rate -> device rate);
- a clock per item: how much of it was actually played, so a cut reply can be
  truncated at what the user heard (``conversation.item.truncate``), and the
  server told how far each reply was heard (``progress``, for ``playback.ack``).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.resample import StreamResampler

Samples = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Cut:
    """A reply cut off mid-item: truncate ``item_id`` at ``audio_end_ms`` (what was heard)."""

    item_id: str
    audio_end_ms: int


@dataclass(frozen=True)
class ItemProgress:
    """How far one assistant item was played: what a ``playback.ack`` may report."""

    response_id: str
    item_id: str
    played_ms: int  # heard so far, never more than what arrived
    settled: bool  # no more of it will play: played to its end, or cut


@dataclass
class _Segment:
    response_id: str
    item_id: str
    samples: Samples
    offset: int = 0

    @property
    def remaining(self) -> int:
        return len(self.samples) - self.offset


@dataclass
class _Item:
    response_id: str
    resampler: StreamResampler
    played: int = 0  # device-rate samples handed to the device
    queued: int = 0  # device-rate samples put in the queue (played or not)
    received: int = 0  # server-rate samples that arrived
    finished: bool = False  # all of its audio arrived


class Playback:
    def __init__(self, in_rate: int, out_rate: int, jitter_ms: int = 120) -> None:
        self.in_rate = in_rate
        self.out_rate = out_rate
        self.jitter_samples = out_rate * jitter_ms // 1000
        self._lock = threading.Lock()
        self._queue: deque[_Segment] = deque()
        self._items: dict[str, _Item] = {}
        self._primed: set[str] = set()  # responses past their jitter buffer
        self._dropped: set[str] = set()  # cut responses: late audio for them is ignored
        self.last_response_id: str | None = None  # whose audio the last read played

    # ------------------------------------------------------------ receive side

    def feed(self, response_id: str, item_id: str, pcm: npt.NDArray[Any]) -> None:
        with self._lock:
            if response_id in self._dropped:
                return
            item = self._items.get(item_id)
            if item is None:
                item = self._items[item_id] = _Item(response_id, StreamResampler(self.in_rate, self.out_rate))
            item.received += len(pcm)
            self._append(item, item_id, item.resampler.process(pcm))

    def audio_done(self, item_id: str) -> None:
        """All of an item's audio arrived (response.output_audio.done): flush its resampler."""
        with self._lock:
            item = self._items.get(item_id)
            if item is not None and not item.finished:
                item.finished = True
                if item.response_id not in self._dropped:
                    self._append(item, item_id, item.resampler.flush())

    def response_done(self, response_id: str) -> None:
        for item_id in [i for i, item in self._items.items() if item.response_id == response_id]:
            self.audio_done(item_id)

    def _append(self, item: _Item, item_id: str, samples: Samples) -> None:
        if len(samples):
            item.queued += len(samples)
            self._queue.append(_Segment(item.response_id, item_id, samples.astype(np.float32, copy=False)))

    def clear(self, response_id: str | None = None) -> list[Cut]:
        """Drop unplayed audio (of one response, or all); the cuts say where each item stopped."""
        with self._lock:
            cut: dict[str, Cut] = {}
            kept: deque[_Segment] = deque()
            for segment in self._queue:
                if response_id is not None and segment.response_id != response_id:
                    kept.append(segment)
                    continue
                self._dropped.add(segment.response_id)
                item = self._items[segment.item_id]
                cut[segment.item_id] = Cut(segment.item_id, item.played * 1000 // self.out_rate)
            self._queue = kept
            if response_id is not None:
                self._dropped.add(response_id)
            else:  # barge-in: nothing still arriving from the cut replies may play either
                self._dropped.update(item.response_id for item in self._items.values() if not item.finished)
            return list(cut.values())

    # ------------------------------------------------------------ device side

    def read(self, frames: int) -> tuple[Samples, int]:
        """``frames`` samples for the device; the first ``n`` are assistant audio, the rest silence.

        One read never spans two responses (the next one starts in the next read),
        so ``last_response_id`` says whose audio it was.
        """
        out = np.zeros(frames, dtype=np.float32)
        filled = 0
        with self._lock:
            while filled < frames and self._queue:
                head = self._queue[0]
                if filled and head.response_id != self.last_response_id:
                    break
                if not self._ready(head.response_id):
                    break
                self.last_response_id = head.response_id
                take = min(frames - filled, head.remaining)
                out[filled : filled + take] = head.samples[head.offset : head.offset + take]
                head.offset += take
                self._items[head.item_id].played += take
                filled += take
                if head.remaining == 0:
                    self._queue.popleft()
        return out, filled

    def _ready(self, response_id: str) -> bool:
        if response_id in self._primed:
            return True
        buffered = sum(s.remaining for s in self._queue if s.response_id == response_id)
        finished = all(item.finished for item in self._items.values() if item.response_id == response_id)
        if buffered >= self.jitter_samples or finished:
            self._primed.add(response_id)
            return True
        return False

    # ------------------------------------------------------------ state

    @property
    def speaking(self) -> bool:
        """Audio is queued, or a reply that started is still arriving."""
        with self._lock:
            return bool(self._queue) or any(
                not item.finished and item.response_id not in self._dropped for item in self._items.values()
            )

    @property
    def buffered(self) -> int:
        with self._lock:
            return sum(segment.remaining for segment in self._queue)

    def played_ms(self, item_id: str) -> int:
        with self._lock:
            item = self._items.get(item_id)
            return 0 if item is None else item.played * 1000 // self.out_rate

    def progress(self) -> list[ItemProgress]:
        """Every item's play head, in ms of the audio that arrived (the server's own clock).

        An item played to its end counts all of its audio as played, so the
        resampler's rounding never keeps its last milliseconds from the server.
        """
        with self._lock:
            queued = {segment.item_id for segment in self._queue}
            report = []
            for item_id, item in self._items.items():
                received_ms = item.received * 1000 // self.in_rate
                whole = item.finished and item.played >= item.queued
                played_ms = received_ms if whole else min(item.played * 1000 // self.out_rate, received_ms)
                settled = whole or (item.response_id in self._dropped and item_id not in queued)
                report.append(ItemProgress(item.response_id, item_id, played_ms, settled))
            return report
