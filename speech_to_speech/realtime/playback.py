"""Playback truth: how much of each assistant item the user heard, and cutting the item there.

Over WebSocket the client plays the audio, so only the client knows where it
stopped: its ``conversation.item.truncate`` cuts the item at ``audio_end_ms``.
Over WebRTC the server's media track plays it, so this ledger also follows the
track's play head: it sends ``output_audio_buffer.started`` / ``stopped`` /
``cleared`` and, when unplayed audio is dropped (barge-in, cancel,
``output_audio_buffer.clear``), cuts each item it belonged to at what was
played and says so with ``conversation.item.truncated``.

Cutting an item cuts its audio (the length later truncations are checked
against) and its transcript, which is what the LLM's history holds. Without
word timings the transcript is cut in proportion to the audio heard, back to
the last whole word: the model is only told what the user could have heard.

Everything here runs on the event loop (the track reports from its ``recv``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from speech_to_speech.realtime import errors
from speech_to_speech.realtime.conversation import Conversation
from speech_to_speech.realtime.errors import RealtimeError
from speech_to_speech.realtime.transport import MediaTrack

Event = dict[str, Any]

# The pipeline's output rate: every count below is in 24 kHz samples.
TTS_RATE = 24000


def samples_to_ms(samples: int) -> int:
    return samples * 1000 // TTS_RATE


def heard_text(transcript: str, heard: int, total: int) -> str:
    """The part of ``transcript`` spoken in the first ``heard`` of ``total`` samples, in whole words."""
    if heard <= 0:
        return ""
    if heard >= total:
        return transcript
    cut = len(transcript) * heard // total
    if cut < len(transcript) and not transcript[cut].isspace():
        cut = max(transcript.rfind(" ", 0, cut), 0)  # a word counts once all of it was heard
    return transcript[:cut].rstrip()


@dataclass
class _ItemAudio:
    response_id: str
    produced: int = 0  # samples the pipeline made for the item (sent as events, or queued on the track)
    played: int = 0  # of those, played out on the media track (WebRTC)


class Playback:
    """One session's ledger of assistant audio; with a media track, also the track's play-out events."""

    def __init__(self, conversation: Conversation, emit: Callable[[Event], None],
                 media: MediaTrack | None = None) -> None:
        self._conversation = conversation
        self._emit = emit
        self._media = media
        self._items: dict[str, _ItemAudio] = {}
        # What the track holds, in its order: [item_id, samples not yet played].
        self._queue: deque[list[Any]] = deque()
        self._playing: str | None = None  # the response whose audio is playing (started, not stopped)
        self._ended: set[str] = set()  # responses with queued or playing audio that will get no more
        self._last_response: str | None = None
        if media is not None:
            media.set_play_listener(self._played)

    # ------------------------------------------------------------ pipeline side

    def produced(self, response_id: str, item_id: str, samples: Any) -> None:
        """``samples`` (24 kHz PCM16) of an item's audio: counted, and played on the track if there is one."""
        count = len(samples)
        if not count:
            return
        entry = self._items.setdefault(item_id, _ItemAudio(response_id))
        entry.produced += count
        if self._media is None:
            return
        if self._queue and self._queue[-1][0] == item_id:
            self._queue[-1][1] += count
        else:
            self._queue.append([item_id, count])
        self._last_response = response_id
        self._media.play(samples)

    def produced_ms(self, item_id: str) -> int:
        """How much audio of the item was produced so far, in ms: where its next chunk starts."""
        entry = self._items.get(item_id)
        return samples_to_ms(entry.produced) if entry is not None else 0

    def response_ended(self, response_id: str) -> None:
        """No more audio will come for ``response_id``: ``stopped`` once the track has played what it holds."""
        if response_id == self._playing or any(self._items[i].response_id == response_id for i, _ in self._queue):
            self._ended.add(response_id)
            self._stop_if_drained()

    # ------------------------------------------------------------ track side

    def _played(self, count: int) -> None:
        """The track played ``count`` more queued samples (front of the queue first)."""
        while count > 0 and self._queue:
            head = self._queue[0]
            step = min(count, head[1])
            entry = self._items[head[0]]
            entry.played += step
            head[1] -= step
            count -= step
            if head[1] == 0:
                self._queue.popleft()
            if entry.response_id != self._playing:
                if self._playing is not None:
                    self._stopped(self._playing)
                self._playing = entry.response_id
                self._emit({"type": "output_audio_buffer.started", "response_id": entry.response_id})
        self._stop_if_drained()

    def _stop_if_drained(self) -> None:
        playing = self._playing
        if playing is None or playing not in self._ended:
            return
        if any(self._items[i].response_id == playing for i, _ in self._queue):
            return
        self._stopped(playing)

    def _stopped(self, response_id: str) -> None:
        self._playing = None
        self._ended.discard(response_id)
        self._emit({"type": "output_audio_buffer.stopped", "response_id": response_id})

    def clear(self, *, requested: bool = False) -> None:
        """Drop what the track has not played; cut each item it belonged to at what was played.

        Sends ``output_audio_buffer.cleared`` when there was audio (or always when
        the client ``requested`` it and any response has played on the track).
        """
        if self._media is None:
            return
        unplayed = [item_id for item_id, _ in self._queue]
        affected = self._playing or (self._items[unplayed[0]].response_id if unplayed else None)
        self._media.clear()
        self._queue.clear()
        self._playing = None
        self._ended.clear()
        response_id = affected or (self._last_response if requested else None)
        if response_id is not None:
            self._emit({"type": "output_audio_buffer.cleared", "response_id": response_id})
        for item_id in dict.fromkeys(unplayed):
            self._cut(item_id, self._items[item_id].played)

    # ------------------------------------------------------------ truncation

    def truncate(self, item_id: str, content_index: Any, audio_end_ms: Any) -> None:
        """A client's ``conversation.item.truncate`` of an existing item; raises RealtimeError."""
        item = self._conversation.get(item_id) or {}
        content = item.get("content") or [{}]
        if item.get("role") != "assistant" or content[0].get("type") != "output_audio":
            raise RealtimeError(errors.INVALID_VALUE, "Only assistant messages with audio can be truncated",
                                param="item_id")
        if content_index != 0 or isinstance(content_index, bool):
            raise RealtimeError(errors.INVALID_VALUE, f"Item {item_id!r} has no content part {content_index!r}",
                                param="content_index")
        if not isinstance(audio_end_ms, int) or isinstance(audio_end_ms, bool) or audio_end_ms < 0:
            raise RealtimeError(errors.INVALID_VALUE, "'audio_end_ms' must be a non-negative integer",
                                param="audio_end_ms")
        entry = self._items.get(item_id)
        produced = entry.produced if entry is not None else 0
        duration_ms = -(-produced * 1000 // TTS_RATE)  # rounded up: a client's count may round up too
        if audio_end_ms > duration_ms:
            raise RealtimeError(errors.INVALID_VALUE,
                                f"Audio content of {duration_ms}ms is already shorter than {audio_end_ms}ms",
                                param="audio_end_ms")
        self._cut(item_id, min(produced, audio_end_ms * TTS_RATE // 1000), audio_end_ms)

    def _cut(self, item_id: str, samples: int, audio_end_ms: int | None = None) -> None:
        item = self._conversation.get(item_id)
        if item is None:
            return  # deleted meanwhile
        entry = self._items.get(item_id)
        content = (item.get("content") or [{}])[0]
        if content.get("transcript"):
            content["transcript"] = heard_text(content["transcript"], samples, entry.produced if entry else 0)
        if entry is not None:
            entry.produced = samples
            entry.played = min(entry.played, samples)
        self._emit({"type": "conversation.item.truncated", "item_id": item_id, "content_index": 0,
                    "audio_end_ms": samples_to_ms(samples) if audio_end_ms is None else audio_end_ms})
