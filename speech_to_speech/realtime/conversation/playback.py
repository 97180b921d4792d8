"""Playback truth: how much of each assistant item the user heard, and cutting the item there.

Over WebSocket the client plays the audio, so only the client knows where it
stopped: its ``conversation.item.truncate`` cuts the item at ``audio_end_ms``.
Over WebRTC the server's media track plays it, so this ledger also follows the
track's play head: it sends ``output_audio_buffer.started`` / ``stopped`` /
``cleared`` and, when unplayed audio is dropped (barge-in, cancel,
``output_audio_buffer.clear``), cuts each item it belonged to at what was
played and says so with ``conversation.item.truncated``.

Cutting an item cuts its audio (the length later truncations are checked
against) and its transcript, which is what the LLM's history holds. The cut
follows the item's text marks (conversation/text_marks.py: where each clause's audio ends),
back to the last whole word: the model is only told what the user could have
heard. A client may also report its play head (``playback.ack``,
conversation/playback_ack.py); with ``playback_commit_policy: ack_only`` an answer enters
the history only as far as the client committed it, or, over WebRTC, as far
as the server's track played it out.

It is the one place told where the client's speaker is (sent, played, stopped);
the echo canceller (conversation/echo.py) listens to it: :class:`SpeakerListener`.

Everything here runs on the event loop (the track reports from its ``recv``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from speech_to_speech.audio.rates import TTS_RATE
from speech_to_speech.protocol import error_codes
from speech_to_speech.protocol.metadata import AUDIO_DURATION_KEY, AUDIO_TEXT_MARKS_KEY, PLAYBACK_KEY
from speech_to_speech.protocol.policies import ACK_ONLY, COMMIT_ALL_ON_DONE
from speech_to_speech.protocol.server_events import ServerEvent
from speech_to_speech.protocol.server_events.conversation import conversation_item_truncated
from speech_to_speech.protocol.server_events.playback import (
    PlaybackFigures,
    output_audio_buffer_cleared,
    output_audio_buffer_started,
    output_audio_buffer_stopped,
)
from speech_to_speech.realtime.connection.transport import MediaTrack
from speech_to_speech.realtime.conversation.history import Conversation
from speech_to_speech.realtime.conversation.item_audio import (
    ItemAudio,
    duration_ms,
    heard_text,
    ms_to_samples,
    samples_to_ms,
)
from speech_to_speech.realtime.conversation.text_marks import heard_text as marked_text
from speech_to_speech.realtime.wire.errors import RealtimeError

# Every sample count below is at TTS_RATE (24 kHz), the pipeline's output rate.
# Responses the ledger still answers acks for, beyond those with items in the conversation.
MAX_KNOWN_RESPONSES = 64


class SpeakerListener(Protocol):
    """Follows the client's speaker beside the ledger (the echo canceller)."""

    def sent(self, samples: Any, item_id: str) -> None: ...  # a chunk of the item sent for the client to play

    def acked(self, item_id: str | None, played_ms: int) -> None: ...  # the client says it played this far

    def stopped(self) -> None: ...  # the client stopped playing what it was sent


class WireOutput(Protocol):
    """Assistant audio put in the session's output format for the client (connection/wire_audio.py)."""

    def encode_output(self, samples: Any) -> str: ...

    def end_output(self, keep_tail: bool) -> str | None: ...


class Playback:
    """One session's ledger of assistant audio; with a media track, also the track's play-out events."""

    def __init__(self, conversation: Conversation, emit: Callable[[ServerEvent], None],
                 media: MediaTrack | None = None, policy: Callable[[], str] = lambda: COMMIT_ALL_ON_DONE,
                 listener: SpeakerListener | None = None, wire: WireOutput | None = None) -> None:
        """``wire``: encodes the audio the client plays from events (None: the ledger only counts it)."""
        self._conversation = conversation
        self._wire = wire
        self._listener = listener
        self._emit = emit
        self._media = media
        self._policy = policy
        self._items: dict[str, ItemAudio] = {}
        self._responses: dict[str, list[str]] = {}  # response id -> its items with audio, oldest first
        # What the track holds, in its order: [item_id, samples not yet played].
        self._queue: deque[list[Any]] = deque()
        self._playing: str | None = None  # the response whose audio is playing (started, not stopped)
        self._ended: set[str] = set()  # responses with queued or playing audio that will get no more
        self._last_response: str | None = None
        # Items of a session taken over from another replica: their history text as the ledger there had it.
        self._restored: dict[str, str] = {}
        self._quiet_at = 0.0  # when the speaker runs out of what it was sent (see ``speaker_quiet_at``)
        if media is not None:
            media.set_play_listener(self._played)

    @property
    def conversation(self) -> Conversation:
        return self._conversation

    @property
    def on_track(self) -> bool:
        """The server's media track plays the audio (WebRTC); else the client plays what the events carry."""
        return self._media is not None

    # ------------------------------------------------------------ pipeline side

    def _entry(self, response_id: str, item_id: str) -> ItemAudio:
        entry = self._items.get(item_id)
        if entry is None:
            self.forget_stale()
            entry = self._items[item_id] = ItemAudio(response_id, self._policy())
            self._responses.setdefault(response_id, []).append(item_id)
        return entry

    def forget_stale(self) -> None:
        """Keep the ledger as small as the conversation: items that left it (and are not queued) go."""
        queued = {item_id for item_id, _ in self._queue}
        for item_id in [i for i in self._restored if i not in self._conversation]:
            del self._restored[item_id]
        for item_id in [i for i in self._items if i not in self._conversation and i not in queued]:
            entry = self._items.pop(item_id)
            self._responses[entry.response_id].remove(item_id)
        while len(self._responses) > MAX_KNOWN_RESPONSES:
            stale = next((r for r, items in self._responses.items() if not items), None)
            if stale is None:
                break
            del self._responses[stale]

    def spoken_text(self, response_id: str, item_id: str, text_chars: int) -> None:
        """The item's transcript grew to ``text_chars``: a clause whose audio comes next (text_marks.py)."""
        entry = self._entry(response_id, item_id)
        if text_chars > entry.text_chars:
            entry.marks.clause(entry.text_chars, text_chars, entry.produced)
            entry.text_chars = text_chars

    def produced(self, response_id: str, item_id: str, samples: Any) -> str | None:
        """``samples`` (24 kHz PCM16) of an item's audio: counted, and played on the track if there is one;
        else returned in the session's output format, the payload of its audio delta."""
        self._count(response_id, item_id, samples)
        if self._media is not None or self._wire is None:
            return None
        return self._wire.encode_output(samples)

    def end_output(self, keep_tail: bool) -> str | None:
        """A response's audio ended: the encoder's held-back tail, if kept (it ends this response, never the
        next)."""
        return self._wire.end_output(keep_tail) if self._wire is not None else None

    def _count(self, response_id: str, item_id: str, samples: Any) -> None:
        count = len(samples)
        if self._media is None and self._listener is not None:
            self._listener.sent(samples, item_id)  # the client plays it from now on, after what came before
        if not count:
            return
        self._quiet_at = max(self._quiet_at, time.monotonic()) + count / TTS_RATE
        entry = self._entry(response_id, item_id)
        entry.produced += count
        entry.generated += count
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

    def settle(self, response_id: str, status: str) -> PlaybackFigures:
        """The response ends with ``status``: its items are done (complete unless cancelled); its figures."""
        for item_id in self._responses.setdefault(response_id, []):
            entry = self._items[item_id]
            entry.done = True
            if status != "cancelled":  # a cancelled clause's audio stopped short: its end stays unknown
                entry.marks.close(entry.produced)
        self._responses[response_id] = self._responses.pop(response_id)  # most recent last
        figures = self.figures(response_id)
        self.forget_stale()  # a text-only session makes no items, but ends responses
        return figures

    def response_ended(self, response_id: str) -> None:
        """No more audio will come for ``response_id``: ``stopped`` once the track has played what it holds."""
        if response_id == self._playing or any(self._items[i].response_id == response_id for i, _ in self._queue):
            self._ended.add(response_id)
            self._stop_if_drained()

    @property
    def speaker_quiet_at(self) -> float:
        """When the user's speaker will have played all the assistant audio sent so far (monotonic seconds): by
        the send clock, each chunk plays from when it is sent, after what came before; dropped audio (a
        barge-in, a cancel) is not played. Past: the speaker is quiet (the wait of realtime/tools/holding.py)."""
        return self._quiet_at

    @property
    def playing_for_s(self) -> float:
        """How long the user's speaker will go on playing assistant audio (seconds): what the media track has
        queued; without one, by the send clock (``speaker_quiet_at``). A WebSocket client plays an answer well
        past its ``response.done`` when the answer was made faster than it is spoken."""
        if self._media is not None:
            return sum(count for _, count in self._queue) / TTS_RATE
        return max(0.0, self._quiet_at - time.monotonic())

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
                self._emit(output_audio_buffer_started(entry.response_id))
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
        self._emit(output_audio_buffer_stopped(response_id))

    def clear(self, *, requested: bool = False) -> None:
        """Playback stops: drop what the track has not played; cut each item it belonged to at what was played.

        Sends ``output_audio_buffer.cleared`` when there was audio (or always when
        the client ``requested`` it and any response has played on the track).
        """
        if self._media is not None:
            self._clear_track(self._media, requested)
        self._stopped_playing()

    def _stopped_playing(self) -> None:
        self._quiet_at = min(self._quiet_at, time.monotonic())
        if self._listener is not None:
            self._listener.stopped()

    def _clear_track(self, media: MediaTrack, requested: bool) -> None:
        unplayed = [item_id for item_id, _ in self._queue]
        for item_id, count in self._queue:
            self._items[item_id].dropped += count
        affected = self._playing or (self._items[unplayed[0]].response_id if unplayed else None)
        media.clear()
        self._queue.clear()
        self._playing = None
        self._ended.clear()
        response_id = affected or (self._last_response if requested else None)
        if response_id is not None:
            self._emit(output_audio_buffer_cleared(response_id))
        for item_id in dict.fromkeys(unplayed):
            self.cut(item_id, self._items[item_id].played)

    # ------------------------------------------------------------ truncation

    def truncate(self, item_id: str, content_index: Any, audio_end_ms: Any) -> None:
        """A client's ``conversation.item.truncate`` of an existing item; raises RealtimeError."""
        item = self._conversation.get(item_id) or {}
        content = item.get("content") or [{}]
        if item.get("role") != "assistant" or content[0].get("type") != "output_audio":
            raise RealtimeError(error_codes.INVALID_VALUE, "Only assistant messages with audio can be truncated",
                                param="item_id")
        if content_index != 0 or isinstance(content_index, bool):
            raise RealtimeError(error_codes.INVALID_VALUE, f"Item {item_id!r} has no content part {content_index!r}",
                                param="content_index")
        if not isinstance(audio_end_ms, int) or isinstance(audio_end_ms, bool) or audio_end_ms < 0:
            raise RealtimeError(error_codes.INVALID_VALUE, "'audio_end_ms' must be a non-negative integer",
                                param="audio_end_ms")
        entry = self._items.get(item_id)
        produced = entry.produced if entry is not None else 0
        if audio_end_ms > duration_ms(produced):
            raise RealtimeError(error_codes.INVALID_VALUE,
                                f"Audio content of {duration_ms(produced)}ms is already shorter than {audio_end_ms}ms",
                                param="audio_end_ms")
        self.cut(item_id, min(produced, ms_to_samples(audio_end_ms)), audio_end_ms)
        self._stopped_playing()  # the client stopped playing there

    def cut(self, item_id: str, samples: int, audio_end_ms: int | None = None) -> None:
        """Cut the item's audio at ``samples`` and its transcript where that audio ends (by its marks)."""
        item = self._conversation.get(item_id)
        if item is None:
            return  # deleted meanwhile
        entry = self._items.get(item_id)
        transcript = (item.get("content") or [{}])[0].get("transcript") or ""
        if entry is None:
            self._conversation.cut_transcript(item_id, heard_text(transcript, samples, 0) if transcript else transcript)
        else:
            heard = marked_text(transcript, entry.marks, samples, entry.produced)
            if transcript:
                self._conversation.cut_transcript(item_id, heard)
            entry.marks.cut(len(heard), samples)
            entry.text_chars = len(heard)
            entry.produced = samples
            entry.played = min(entry.played, samples)
            entry.played_ms = min(entry.played_ms, samples_to_ms(samples))
            entry.committed_ms = min(entry.committed_ms, entry.played_ms)
        self._emit(conversation_item_truncated(item_id, samples_to_ms(samples) if audio_end_ms is None
                                               else audio_end_ms))

    # ------------------------------------------------------------ acknowledged playback

    def items_of(self, response_id: str) -> list[str] | None:
        """The response's items with audio; None for a response the ledger does not know."""
        return self._responses.get(response_id)

    def item(self, item_id: str) -> ItemAudio | None:
        return self._items.get(item_id)

    def acknowledged(self, item_id: str | None, played_ms: int, committed_ms: int, truncate: bool) -> None:
        """Record a checked ``playback.ack`` (playback_ack.py) of the item (None: its response has no audio
        yet); a truncating one cuts it there, and the client stopped playing."""
        entry = self._items.get(item_id) if item_id is not None else None
        if entry is not None and item_id is not None:
            if truncate:  # even at the end of its audio: a cancelled clause's text may run past it
                self.cut(item_id, entry.samples_at(played_ms), played_ms)
            entry.played_ms = played_ms
            entry.committed_ms = min(committed_ms, played_ms)
            if not truncate:  # a client behind the send clock (its jitter buffer) plays the rest later
                unplayed_s = max(0, duration_ms(entry.produced) - played_ms) / 1000
                self._quiet_at = max(self._quiet_at, time.monotonic() + unplayed_s)
        if truncate:
            self._stopped_playing()
        elif self._listener is not None:
            self._listener.acked(item_id, played_ms)

    def figures(self, response_id: str) -> PlaybackFigures:
        """The response's ``playback``: audio generated, sent (not dropped unplayed), played, committed; in ms."""
        totals: PlaybackFigures = {"generated_ms": 0, "sent_ms": 0, "played_ms": 0, "committed_ms": 0}
        for item_id in self._responses.get(response_id, []):
            entry = self._items[item_id]
            totals["generated_ms"] += samples_to_ms(entry.generated)
            totals["sent_ms"] += samples_to_ms(entry.generated - entry.dropped)
            totals["played_ms"] += max(entry.played_ms, samples_to_ms(entry.played))
            totals["committed_ms"] += entry.committed()
        return totals

    def delta_metadata(self, response_id: str, item_id: str) -> dict[str, Any]:
        """The metadata of the item's next audio delta: its audio so far, new text marks, the figures.

        A mark's ``audio_end_ms`` is rounded up: by then all of its text was voiced.
        """
        entry = self._items.get(item_id)
        return {
            AUDIO_DURATION_KEY: samples_to_ms(entry.produced) if entry is not None else 0,
            AUDIO_TEXT_MARKS_KEY: [{"text_chars": m.text_chars, "audio_end_ms": duration_ms(m.audio_end)}
                                   for m in (entry.marks.unsent() if entry is not None else [])],
            PLAYBACK_KEY: self.figures(response_id),
        }

    def restore(self, history_texts: Mapping[str, str]) -> None:
        """Take over what another replica's ledger said of its items' history text (``history_text``)."""
        self._restored = dict(history_texts)

    def history_text(self, item_id: str, item: dict[str, Any]) -> str | None:
        """The text the LLM's history holds for the item; None: its whole text (not an ``ack_only`` answer)."""
        entry = self._items.get(item_id)
        if entry is None:
            return self._restored.get(item_id)
        if entry.policy != ACK_ONLY:
            return None
        return entry.history_text(((item.get("content") or [{}])[0]).get("transcript") or "")

