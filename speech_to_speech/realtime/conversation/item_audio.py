"""One assistant item's audio as the playback ledger knows it, and the sample and millisecond arithmetic.

:class:`ItemAudio` counts the item's samples (made, played, dropped) and the
client's acknowledged play head, and answers how much of its audio the history
covers (:meth:`ItemAudio.committed`) and with which text
(:meth:`ItemAudio.history_text`). Every sample count is at TTS_RATE (24 kHz),
the pipeline's output rate; acknowledged positions are in ms, as clients send
them. The ledger itself is conversation/playback.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from speech_to_speech.audio.rates import TTS_RATE
from speech_to_speech.protocol.policies import ACK_ONLY, COMMIT_ALL_ON_DONE
from speech_to_speech.realtime.conversation.text_marks import TextMarks
from speech_to_speech.realtime.conversation.text_marks import heard_text as marked_text


def samples_to_ms(samples: int) -> int:
    return samples * 1000 // TTS_RATE


def ms_to_samples(ms: int) -> int:
    return ms * TTS_RATE // 1000


def duration_ms(samples: int) -> int:
    """An audio length in ms rounded up: a client adding up its chunks' lengths may round up too."""
    return -(-samples * 1000 // TTS_RATE)


def heard_text(transcript: str, heard: int, total: int) -> str:
    """The part of ``transcript`` spoken in the first ``heard`` of ``total`` samples, in whole words (no marks)."""
    return marked_text(transcript, None, heard, total)


@dataclass
class ItemAudio:
    """What the ledger knows of one assistant item's audio; acked positions are in ms, as clients send them."""

    response_id: str
    policy: str = COMMIT_ALL_ON_DONE  # the session's playback_commit_policy when the item began
    produced: int = 0  # samples the item's audio has (made by the pipeline, less what cuts removed)
    played: int = 0  # of those, played out on the media track (WebRTC)
    generated: int = 0  # samples the pipeline made for the item, whatever was cut later
    dropped: int = 0  # samples cleared from the media track before they were played
    text_chars: int = 0  # transcript characters seen so far
    marks: TextMarks = field(default_factory=TextMarks)
    played_ms: int = 0  # the client's cumulative play head (playback.ack)
    committed_ms: int = 0  # how far the client committed it to the history (playback.ack)
    done: bool = False  # its response ended: no more audio comes

    def committed(self) -> int:
        """How much of the item's audio (ms) its history text covers, under the policy it was made with."""
        if self.policy == ACK_ONLY:
            # Over WebRTC the server's own track plays the audio: what it played out was heard.
            return max(self.committed_ms, samples_to_ms(self.played))
        return samples_to_ms(self.produced) if self.done else 0

    def samples_at(self, ms: int) -> int:
        """``ms`` into the item's audio, in samples; within a millisecond of its end counts as the end.

        Clients add up their chunks' durations in whole ms, rounding either way: an
        ack of all they received must not lose the last word to a rounding.
        """
        samples = ms_to_samples(ms)
        return self.produced if ms > 0 and samples >= self.produced - TTS_RATE // 1000 else samples

    def history_text(self, transcript: str) -> str:
        """What the history holds of ``transcript``: as far as its committed audio (an ``ack_only`` answer)."""
        return marked_text(transcript, self.marks, self.samples_at(self.committed()), self.produced)
