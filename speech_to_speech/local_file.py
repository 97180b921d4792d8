"""File mode of ``speech-to-speech local``: a WAV of questions in, a WAV of answers out.

No client and no protocol: one PipelineUnit is driven directly. The input is
pushed as a user would speak it (followed by silence so the VAD ends the last
turn); every completed transcript becomes a GenerateResponseRequest carrying
the running chat history (the LLM adds the system prompt), and the audio of
each answer is appended to the output, with a short pause between turns.
Turns are answered in order; this mode has no barge-in.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech import ids
from speech_to_speech.audio.resample import resample, to_int16
from speech_to_speech.audio.wav import read_wav, write_wav
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.builder import PipelineFactory
from speech_to_speech.pipeline.messages import (
    AudioOutput,
    ChatMessage,
    GenerateResponseRequest,
    ResponseDone,
    SessionEnd,
    StageError,
    TranscriptionCompleted,
    TranscriptText,
)
from speech_to_speech.pipeline.unit import PipelineUnit

INPUT_RATE = 16000
OUTPUT_RATE = 24000
GAP_S = 0.5  # silence between two answers in the output
PUSH_BLOCK = 320  # 20 ms: the pace of --realtime input

Report = Callable[[str, str], None]  # (who, text): "user", "assistant" or "error"


@dataclass(frozen=True)
class Turn:
    transcript: str
    reply: str
    status: str
    error: str | None = None


class FileSessionError(RuntimeError):
    pass


class FileSession:
    """Runs the turns of one input signal through ``unit`` and gathers the answers."""

    def __init__(
        self, unit: PipelineUnit, settings: ServerSettings, report: Report, idle_timeout_s: float = 300.0
    ) -> None:
        self.unit = unit
        self.settings = settings
        self.report = report
        self.idle_timeout_s = idle_timeout_s
        self.history: list[ChatMessage] = []

    def run(
        self, samples: npt.NDArray[np.float32], *, realtime: bool = False, trailing_silence_s: float = 1.5
    ) -> tuple[list[Turn], npt.NDArray[np.int16]]:
        """Answer every turn of ``samples`` (16 kHz mono); returns the turns and 24 kHz audio."""
        audio = np.concatenate([samples, np.zeros(int(trailing_silence_s * INPUT_RATE), np.float32)])
        stop = threading.Event()
        feeder = threading.Thread(target=self._feed, args=(audio, realtime, stop), name="file-input", daemon=True)
        feeder.start()
        turns: list[Turn] = []
        answers: list[npt.NDArray[np.int16]] = []
        try:
            for transcript in self._transcripts():
                turn, answer = self._answer(transcript)
                turns.append(turn)
                answers.append(answer)
        finally:
            stop.set()
            feeder.join()
        gap = np.zeros(int(GAP_S * OUTPUT_RATE), np.int16)
        pieces = [piece for answer in answers for piece in (answer, gap)][:-1]
        return turns, np.concatenate(pieces) if pieces else np.zeros(0, np.int16)

    def _feed(self, audio: npt.NDArray[np.float32], realtime: bool, stop: threading.Event) -> None:
        started = time.monotonic()
        block = PUSH_BLOCK if realtime else max(1, len(audio))
        for start in range(0, len(audio), block):
            if realtime and stop.wait(max(0.0, started + start / INPUT_RATE - time.monotonic())):
                return
            self.unit.push_audio(audio[start : start + block])
        # A SessionEnd on the input branch alone: it reaches text_output after the last transcript.
        self.unit.queues.recv_audio_chunks.put(SessionEnd())

    def _transcripts(self) -> Iterator[str]:
        """Yield each non-empty user transcript until the input is used up."""
        while True:
            item = self._next(self.unit.queues.text_output)
            if isinstance(item, SessionEnd):
                return
            if isinstance(item, StageError):
                self.report("error", f"{item.stage}: {item.message}")
            elif isinstance(item, TranscriptionCompleted):
                if item.transcript.strip():
                    self.report("user", item.transcript)
                    yield item.transcript
                else:
                    self.report("error", "a turn had no recognisable words; skipped")

    def _next(self, source: queue.Queue[Any]) -> Any:
        """The next item of ``source``, failing if the unit dies or stays silent too long."""
        deadline = time.monotonic() + self.idle_timeout_s
        while True:
            try:
                return source.get(timeout=1.0)
            except queue.Empty:
                if not self.unit.healthy():
                    raise FileSessionError(f"pipeline stage died: {self.unit.dead_stages()}") from None
                if time.monotonic() > deadline:
                    raise FileSessionError(f"nothing from the pipeline for {self.idle_timeout_s:.0f} s") from None

    def _answer(self, transcript: str) -> tuple[Turn, npt.NDArray[np.int16]]:
        self.history.append(ChatMessage("user", transcript))
        response_id = ids.response_id()
        self.unit.submit(
            GenerateResponseRequest(
                response_id=response_id,
                generation=self.unit.cancel_scope.generation,
                # This question and the chat_size exchanges before it.
                messages=tuple(self.history[-(2 * self.settings.chat_size + 1) :]),
            )
        )
        items = [self._next(self.unit.queues.send_audio_chunks)]
        while not (isinstance(items[-1], ResponseDone) and items[-1].response_id == response_id):
            items.append(self._next(self.unit.queues.send_audio_chunks))
        for error_item in (i for i in items if isinstance(i, StageError)):
            self.report("error", f"{error_item.stage}: {error_item.message}")
        done: ResponseDone = items[-1]
        reply = "".join(i.text for i in items if isinstance(i, TranscriptText)).strip()
        if reply:
            self.history.append(ChatMessage("assistant", reply))
        self.report("assistant", reply or f"(no reply: {done.status}{f', {done.error}' if done.error else ''})")
        chunks = [_at_output_rate(i) for i in items if isinstance(i, AudioOutput)]
        audio = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
        return Turn(transcript, reply, done.status, done.error), audio


def _at_output_rate(item: AudioOutput) -> npt.NDArray[np.int16]:
    if item.sample_rate == OUTPUT_RATE:
        return item.samples
    return to_int16(resample(item.samples, item.sample_rate, OUTPUT_RATE))


def run_file(
    settings: ServerSettings,
    input_wav: str | Path,
    output_wav: str | Path,
    report: Report,
    *,
    realtime: bool = False,
    trailing_silence_s: float = 1.5,
) -> list[Turn]:
    """Load the models of ``settings``, answer every turn of ``input_wav``, write ``output_wav``."""
    samples, _ = read_wav(input_wav, INPUT_RATE)
    unit = PipelineFactory(settings).build_unit(0)
    unit.start()
    try:
        turns, audio = FileSession(unit, settings, report).run(
            samples, realtime=realtime, trailing_silence_s=trailing_silence_s
        )
    finally:
        unit.stop()
    write_wav(output_wav, audio, OUTPUT_RATE)
    return turns
