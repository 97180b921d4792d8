"""STTHandler: utterances in, transcripts out; backends implement ``transcribe``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from speech_to_speech.pipeline.handler import BackendHandler
from speech_to_speech.pipeline.messages import FloatAudio, Transcript, Utterance

SAMPLE_RATE = 16000
MIN_SAMPLES = SAMPLE_RATE // 10


class STTHandler(BackendHandler):
    stage = "stt"
    consumes = (Utterance,)

    def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
        """Return (text, detected language) for 16 kHz float32 mono audio."""
        raise NotImplementedError

    def language(self) -> str | None:
        """The session's language if chosen ("auto" = let the model detect), else the flag."""
        chosen = self.context.config.current.language
        if chosen and chosen != "auto":
            return chosen
        if chosen == "auto":
            return None
        return self.settings.stt_language

    def process(self, item: Utterance) -> Iterator[Any]:
        # A commit of (almost) nothing has nothing to transcribe; models may hallucinate on it.
        if len(item.samples) < MIN_SAMPLES:
            text, language = "", None
        else:
            text, language = self.transcribe(item.samples, self.language())
        yield Transcript(
            text=text.strip(),
            final=True,
            item_id=item.item_id,
            language=language,
            audio_seconds=len(item.samples) / SAMPLE_RATE,
            manual=item.manual,
            stt_done_time=time.monotonic(),
            vad_end_time=item.vad_end_time,
        )

    def on_error(self, item: Any, error: BaseException) -> Iterator[Any]:
        yield from super().on_error(item, error)
        # The turn must still complete so the session does not wait forever.
        if isinstance(item, Utterance):
            yield Transcript(
                text="",
                final=True,
                item_id=item.item_id,
                audio_seconds=len(item.samples) / SAMPLE_RATE,
                manual=item.manual,
                stt_done_time=time.monotonic(),
            vad_end_time=item.vad_end_time,
            )
