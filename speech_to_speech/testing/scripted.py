"""Scripted handlers for tests and benchmarks: no model, given behaviour and timings.

- ``EnergyVAD`` ("scripted" VAD): speech is any chunk louder than the threshold
  (RMS scaled to 0..1), so tones and silence make exact turns.
- ``ScriptedSTT``: returns the given transcripts in turn (cycling), emitting
  word-by-word partial hypotheses first, after an optional delay.
- ``ScriptedLLM``: streams the given replies word by word with a given delay per
  token; ``{heard}`` in a reply stands for the last user message;
  ``<tool_call>name {json}</tool_call>`` in a reply becomes a tool call;
  ``[[pause:MS]]`` holds the reply there for MS milliseconds (a call being written, a slow first token);
  ``[[incomplete:reason]]`` / ``[[failed:message]]`` end it with that status.
- ``ScriptedTTS``: a tone per clause, ``scripted_tts_ms_per_char`` long, its
  pitch set by the voice (``SCRIPTED_VOICES``).

They are never a default: ``--vad/--stt/--llm/--tts scripted`` picks them.
Their knobs are the ``testing`` section (``--scripted_*``): the loaders find the
scripts in the LoadContext, the handlers are given the section (``given_sections``).
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from speech_to_speech import ids, registry
from speech_to_speech.audio.rates import TTS_RATE
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import LoadContext, TestingSettings
from speech_to_speech.llm.base import GeneratedPart, LLMHandler, Terminal
from speech_to_speech.pipeline.messages.generation import AssistantToolCallPart, GenerateResponseRequest, TokenUsage
from speech_to_speech.pipeline.messages.input_audio import Utterance
from speech_to_speech.pipeline.messages.transcription import Transcript
from speech_to_speech.stt.base import STTHandler
from speech_to_speech.tts.base import TTSHandler
from speech_to_speech.vad.base import VADHandler

# Fast, deterministic wire tests: every stage scripted; a 0.6 s tone ends as a turn after 0.3 s of
# silence, and 10 ms of tone per reply character keeps replies short. One unit, whatever the
# machine: a test that wants more says how many.
FAST_SCRIPTED: dict[str, Any] = {
    "num_pipelines": 1,
    "vad": "scripted",
    "stt": "scripted",
    "llm": "scripted",
    "tts": "scripted",
    "min_silence_ms": 300,
    "speech_pad_ms": 100,
    "scripted_tts_ms_per_char": 10.0,
    "release_timeout_s": 3.0,
}

# The scripted TTS's voices and their pitch (Hz); any other name (OpenAI's) speaks with the first.
SCRIPTED_VOICES: dict[str, float] = {"tone": 440.0, "low_tone": 220.0}

# The scripted VAD maps RMS to a probability: RMS of ENERGY_FULL_SCALE or more is 1.0.
ENERGY_FULL_SCALE = 0.05


def _no_model(settings: Any, context: LoadContext) -> None:
    return None


class _Knobs:
    """Given the testing section (``--scripted_*``) beside its own: its delays and lengths."""

    given_sections: ClassVar[dict[str, str]] = {"testing": "testing"}

    def __init__(self, *args: Any, testing: TestingSettings | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.testing = testing or TestingSettings.model_validate({})


@registry.register("vad", "scripted", _no_model)
class EnergyVAD(VADHandler):
    hears_speech = False  # loudness, not speech: its turns end by silence alone

    @staticmethod
    def probability_of(chunk: FloatAudio) -> float:
        rms = float(np.sqrt(np.mean(np.square(chunk)))) if len(chunk) else 0.0
        return min(1.0, rms / ENERGY_FULL_SCALE)

    def speech_probability(self, chunk: FloatAudio) -> float:
        return self.probability_of(chunk)


class _Script:
    """A cycling list shared by the units of one server (each turn takes the next)."""

    def __init__(self, entries: list[str]) -> None:
        self._entries = itertools.cycle(entries or [""])
        self._lock = threading.Lock()

    def next(self) -> str:
        with self._lock:
            return next(self._entries)


def _load_transcripts(settings: Any, context: LoadContext) -> _Script:
    return _Script(context.testing.transcripts or ["What is the capital of France?"])


# In a scripted transcript, " | " separates what is said in successive bursts of speech.
SEGMENT_SEPARATOR = " | "
# A scripted transcript that starts "[fr] " is heard in that language (else in English).
_HEARD_IN = re.compile(r"^\[([a-z]{2}(?:-[a-z]+)?)\]\s*")


def voiced_runs(samples: FloatAudio, chunk: int = 512) -> int:
    """Bursts of speech in ``samples``: runs of chunks the scripted VAD hears, apart by a quiet one."""
    runs, voiced_before = 0, False
    for start in range(0, len(samples) - chunk + 1, chunk):
        voiced = EnergyVAD.probability_of(samples[start : start + chunk]) >= 0.5
        runs += voiced and not voiced_before
        voiced_before = voiced
    return runs


@registry.register("stt", "scripted", _load_transcripts)
class ScriptedSTT(_Knobs, STTHandler):
    """Each turn gets the next scripted transcript; a speculation of the turn sees the same one.

    A transcript written in segments ("Tell me | a long story") is heard as
    far as the audio goes: an utterance with k bursts of speech gets the first
    k segments, so a speculation at a pause hears less than the whole turn.
    """

    _item: tuple[str | None, str] | None = None

    def transcribe_utterance(self, item: Utterance) -> tuple[str, str | None]:
        if self._item is None or self._item[0] != item.item_id or item.item_id is None:
            self._item = (item.item_id, self.model.next())
        delay = self.testing.stt_delay_ms / 1000.0
        if delay:
            time.sleep(delay)
        language = _HEARD_IN.match(self._item[1])
        segments = self._item[1][language.end() if language else 0:].split(SEGMENT_SEPARATOR)
        if len(segments) > 1:
            segments = segments[: max(1, voiced_runs(item.samples))]
        return " ".join(segments), language.group(1) if language else "en"

    def partials(self, item: Utterance, text: str) -> Iterator[Transcript]:
        words = text.split()
        for count in range(1, len(words)):
            yield Transcript(" ".join(words[:count]), final=False, item_id=item.item_id)


def _load_replies(settings: Any, context: LoadContext) -> _Script:
    return _Script(context.testing.replies or ["Paris is the capital of France."])


# In a scripted reply, stands for the last user message: the reply shows what the LLM was asked.
HEARD = "{heard}"
# Stands for every message of the request ("role: text | …"): the reply shows the whole history asked.
HISTORY = "{history}"
_TOOL_CALL = re.compile(r"<tool_call>\s*([\w.-]+)\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
_PAUSE = re.compile(r"\[\[pause:(\d+)\]\]")
_CALL_OR_PAUSE = re.compile(f"{_TOOL_CALL.pattern}|{_PAUSE.pattern}", re.DOTALL)
_TERMINAL = re.compile(r"\[\[(incomplete|failed):([^\]]*)\]\]")
_TOKEN = re.compile(r"\S+\s*|\s+")


@registry.register("llm", "scripted", _load_replies)
class ScriptedLLM(_Knobs, LLMHandler):
    def _pause(self, seconds: float, generation: int) -> None:
        """Wait ``seconds``, or until the request is cancelled (its output would be dropped anyway)."""
        until = time.monotonic() + seconds
        while time.monotonic() < until and not self.cancel_scope.is_stale(generation):
            time.sleep(min(0.02, max(0.0, until - time.monotonic())))

    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        heard = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        asked = " | ".join(f"{m.role}: {m.content}" for m in request.messages)
        reply = self.model.next().replace(HEARD, heard).replace(HISTORY, asked)
        delay = self.testing.token_delay_ms / 1000.0
        terminal: Terminal | None = None
        found = _TERMINAL.search(reply)
        if found:
            reply = reply[: found.start()]
            kind, detail = found.group(1), found.group(2)
            terminal = (
                Terminal("incomplete", reason=detail or "max_output_tokens")
                if kind == "incomplete"
                else Terminal("failed", error=detail or "scripted failure")
            )
        tokens = 0
        position = 0
        for match in _CALL_OR_PAUSE.finditer(reply):
            for token in _TOKEN.findall(reply[position : match.start()]):
                if delay:
                    time.sleep(delay)
                tokens += 1
                yield token
            if match.group(3) is not None:
                self._pause(int(match.group(3)) / 1000.0, request.generation)
            else:
                yield AssistantToolCallPart(
                    request.response_id, request.generation, ids.call_id(), match.group(1), match.group(2)
                )
            position = match.end()
        for token in _TOKEN.findall(reply[position:]):
            if delay:
                time.sleep(delay)
            tokens += 1
            yield token
        yield TokenUsage(
            request.response_id,
            request.generation,
            input_tokens=sum(len(m.content.split()) for m in request.messages),
            output_tokens=tokens,
        )
        if terminal is not None:
            yield terminal


def tone(
    seconds: float, rate: int = TTS_RATE, frequency: float = 440.0, level: float = 0.3
) -> npt.NDArray[np.float32]:
    t = np.arange(int(seconds * rate), dtype=np.float32) / rate
    return (level * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


@registry.register("tts", "scripted", _no_model)
class ScriptedTTS(_Knobs, TTSHandler):
    @property
    def voices(self) -> tuple[str, ...]:
        return tuple(SCRIPTED_VOICES)

    def synthesize(self, text: str, voice: str | None, language: str | None) -> Iterator[npt.NDArray[Any]]:
        seconds = len(text) * self.testing.tts_ms_per_char / 1000.0
        pitch = SCRIPTED_VOICES.get(voice or "", SCRIPTED_VOICES["tone"])
        audio = tone(seconds, frequency=pitch)
        piece = TTS_RATE // 10
        for start in range(0, len(audio), piece):
            yield audio[start : start + piece]


@contextmanager
def recorded_requests() -> Iterator[list[GenerateResponseRequest]]:
    """Every request the scripted LLMs receive while this is open (what the model was asked), in order."""
    seen: list[GenerateResponseRequest] = []
    lock = threading.Lock()
    original = ScriptedLLM.generate

    def generate(self: ScriptedLLM, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        with lock:
            seen.append(request)
        return original(self, request)

    ScriptedLLM.generate = generate  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        ScriptedLLM.generate = original  # type: ignore[method-assign]

