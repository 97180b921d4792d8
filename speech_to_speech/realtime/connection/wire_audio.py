"""One session's audio on the wire: client formats in, 24 kHz pipeline audio out.

Input (PCM16 at any rate, G.711 µ-law/A-law at 8 kHz) is decoded and
resampled to the pipeline's 16 kHz; output is resampled from 24 kHz to the
session's output format. Both resamplers keep state across chunks, so their
held-back tails are flushed where a stream ends (a commit, a response) and
never leak into the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from speech_to_speech.audio import codecs
from speech_to_speech.audio.rates import PIPELINE_RATE, TTS_RATE
from speech_to_speech.audio.resample import StreamResampler, to_int16
from speech_to_speech.audio.samples import FloatAudio, Int16Audio
from speech_to_speech.realtime.wire.session import format_rate

# Base64 characters decoded at a time: a multiple of 8, so each slice is whole base64 quanta and
# whole PCM16 samples (the odd-length check still sees the payload's end in its last slice).
SLICE_CHARS = 256 * 1024

Format = Callable[[], dict[str, Any]]


class _Stream:
    """A resampler for one format, rebuilt when the format changes."""

    def __init__(self) -> None:
        self.resampler: StreamResampler | None = None
        self.key: tuple[str, int] | None = None

    def get(self, key: tuple[str, int], in_rate: int, out_rate: int) -> StreamResampler:
        if self.key != key or self.resampler is None:
            self.resampler, self.key = StreamResampler(in_rate, out_rate), key
        return self.resampler

    def take(self) -> StreamResampler | None:
        resampler, self.resampler, self.key = self.resampler, None, None
        return resampler


class WireAudio:
    def __init__(self, input_format: Format, output_format: Format) -> None:
        self._input_format = input_format
        self._output_format = output_format
        self._input = _Stream()
        self._output = _Stream()

    def decode_input(self, payload: str) -> FloatAudio:
        """A base64 append in the session's input format -> 16 kHz float32; raises AudioDecodeError.

        A large payload is decoded and resampled in slices: each C call holds the GIL
        briefly, so the event loop (and the other sessions) run between them. All of
        it is decoded before any is resampled, so a bad payload leaves no trace.
        """
        fmt = self._input_format()
        fmt_type, rate = fmt.get("type", "audio/pcm"), format_rate(fmt)
        slices = [codecs.decode(payload[start:start + SLICE_CHARS], fmt_type)
                  for start in range(0, max(len(payload), 1), SLICE_CHARS)]
        resampler = self._input.get((fmt_type, rate), rate, PIPELINE_RATE)
        resampled = [resampler.process(samples) for samples in slices]
        return resampled[0] if len(resampled) == 1 else np.concatenate(resampled)

    def flush_input(self) -> FloatAudio:
        """The input resampler's tail (what belongs to the audio before a commit)."""
        resampler = self._input.take()
        return resampler.flush() if resampler is not None else np.zeros(0, np.float32)

    def reset_input(self) -> None:
        self._input.take()

    def encode_output(self, samples: Int16Audio) -> str:
        """24 kHz pipeline audio -> base64 in the session's output format."""
        fmt = self._output_format()
        fmt_type, rate = fmt.get("type", "audio/pcm"), format_rate(fmt)
        if rate != TTS_RATE:
            samples = to_int16(self._output.get((fmt_type, rate), TTS_RATE, rate).process(samples))
        return codecs.encode(samples, fmt_type)

    def end_output(self, keep_tail: bool) -> str | None:
        """Close a response's output stream: its encoded tail, if kept and non-empty."""
        resampler = self._output.take()
        if resampler is None or not keep_tail:
            return None
        tail = to_int16(resampler.flush())
        if not len(tail):
            return None
        return codecs.encode(tail, self._output_format().get("type", "audio/pcm"))
