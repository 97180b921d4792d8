"""``bench overhead``: the server's own cost per hop, with scripted handlers that take no time.

Each hop is a stage's output -> the event it causes read by the client:

- ``append_to_speech_started_ms``: the append holding the sample that makes
  the VAD's ``min_speech_ms`` of speech -> ``speech_started``. Audio goes in at
  16 kHz in 32 ms appends, so every append is one VAD chunk and that sample
  is the last of an append (no resampler, no partial chunk in between);
- ``vad_to_speech_stopped_ms``: the VAD's end of speech -> ``speech_stopped``;
- ``stt_to_transcript_ms``: STT done -> ``input_audio_transcription.completed``;
- ``llm_to_text_delta_ms``: the LLM's first token -> the first transcript delta;
- ``tts_to_audio_delta_ms``: the TTS's first audio -> the first audio delta;
- ``send_to_wire_ms``: first audio handed to the transport -> read by the client.

The server marks are the timings extension's; both ends share the clock.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.bench import audio
from speech_to_speech.bench.events import AUDIO_DELTA, Clock, first, of_type
from speech_to_speech.bench.mic import PacedMic, ask, session
from speech_to_speech.bench.stats import summarize_fields
from speech_to_speech.bench.target import Target
from speech_to_speech.testing.realtime_client import Received
from speech_to_speech.vad.base import CHUNK_MS

# (figure, the server's mark, the client event that shows it on the wire)
SERVER_HOPS: tuple[tuple[str, str, str], ...] = (
    ("vad_to_speech_stopped_ms", "vad_end_of_speech", "input_audio_buffer.speech_stopped"),
    ("stt_to_transcript_ms", "stt_done", "conversation.item.input_audio_transcription.completed"),
    ("llm_to_text_delta_ms", "llm_first_token", "response.output_audio_transcript.delta"),
    ("tts_to_audio_delta_ms", "tts_first_audio", AUDIO_DELTA),
    ("send_to_wire_ms", "first_audio_sent", AUDIO_DELTA),
)
FIGURES = ("append_to_speech_started_ms", *(name for name, _, _ in SERVER_HOPS))
VAD_CHUNK_SAMPLES = PIPELINE_RATE * CHUNK_MS // 1000
DECISIVE = "decisive"  # the mark of the sample that completes min_speech_ms


@dataclass(frozen=True)
class OverheadConfig:
    turns: int = 30
    min_speech_ms: int = 250  # the server's; it decides which append makes speech_started
    speech_ms: int = 320
    lead_ms: int = 128
    timeout_s: float = 30.0


def turn_clip(config: OverheadConfig) -> tuple[audio.Speech, int]:
    """A 16 kHz tone after silence, both whole VAD chunks; and the index of its decisive sample."""
    lead = config.lead_ms * PIPELINE_RATE // 1000 // VAD_CHUNK_SAMPLES * VAD_CHUNK_SAMPLES
    speech = max(1, config.speech_ms // CHUNK_MS) * VAD_CHUNK_SAMPLES
    samples = np.concatenate([np.zeros(lead, np.float32), audio.tone(speech / PIPELINE_RATE, PIPELINE_RATE)])
    # The VAD calls speech once it has counted min_speech_ms of voiced 32 ms chunks.
    chunks = max(1, math.ceil(config.min_speech_ms / CHUNK_MS))
    if chunks * VAD_CHUNK_SAMPLES > speech:
        raise ValueError(f"speech_ms {config.speech_ms} is shorter than min_speech_ms {config.min_speech_ms}")
    clip = audio.Speech("tone", "", samples, PIPELINE_RATE, lead, lead + speech)
    return clip, lead + chunks * VAD_CHUNK_SAMPLES - 1


def hop_sample(log: list[Received], marks: dict[str, float], rid: str, clock: Clock) -> dict[str, float]:
    sample = {}
    for name, mark, kind in SERVER_HOPS:
        # Response events must be this response's; the input events precede it in the turn's log.
        seen = first(log, of_type(kind, rid if kind.startswith("response.") else None))
        if seen is not None and mark in marks:
            sample[name] = round(clock.epoch_ms(seen.at) - marks[mark], 3)
    return sample


async def run(target: Target, config: OverheadConfig) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    clip, decisive = turn_clip(config)
    clock = Clock.now()
    samples: list[dict[str, Any]] = []
    await target.wait_idle()
    pcm16k = {"audio": {"input": {"format": {"type": "audio/pcm", "rate": PIPELINE_RATE}}}}
    async with session(target.ws_url, timeout=config.timeout_s, **pcm16k) as client, \
            PacedMic(client, PIPELINE_RATE, CHUNK_MS) as mic:
        for index in range(config.turns):
            start = len(client.received)
            said, turn = await ask(client, mic, clip, config.timeout_s, {DECISIVE: decisive})
            log = client.received[start:]
            started = first(log, of_type("input_audio_buffer.speech_started"))
            sample: dict[str, Any] = {"turn": index, "status": turn.status}
            if started is not None and DECISIVE in said.sent:
                sample["append_to_speech_started_ms"] = round((started.at - said.sent[DECISIVE]) * 1000.0, 3)
            sample.update(hop_sample(log, turn.marks, turn.response_id, clock))
            samples.append(sample)
            await said.finished.wait()
            await asyncio.sleep(0.1)  # a breath between turns
    return summarize_fields(samples, FIGURES), samples, asdict(config)
