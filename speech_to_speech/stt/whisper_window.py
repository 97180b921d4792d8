"""A shorter encoder window for Whisper on CTranslate2.

Whisper's encoder always sees 30 s of log-mel frames; faster-whisper pads a
2 s turn's features with zeros up to 3000 frames and the encoder spends most
of a CPU transcription on that padding. CTranslate2 accepts fewer frames, and
the encoder's cost falls with them, but the decoder then sees an input shape
it was never trained on, and what it makes of it is erratic: with the padding
starting right after the last word it often repeats the sentence until the
token limit, and an ill-chosen length turns "Please set a timer" into
"Police at a timer" (measured in ``bench/stt_window.py``; the figures are in
``docs/benchmarks/stt_window.json``).

What held up there: the turn followed by ``tail_s`` of digital silence (made
into log-mel frames like the speech), the rest of a fixed ``window_s`` window
padded with zero features exactly as faster-whisper pads, and greedy or beam
decoding with faster-whisper's own prompt and suppressed tokens. The result
is checked (:func:`suspicious`): a repeated phrase, a decode that ran into its
token budget or a low average log-probability sends the turn to the stock
30 s path, as does a turn too long for the window. One loop is mended
instead: a transcript the decoder began again after its last word
(:func:`restarted`) keeps the words before the restart, if they pass the
check on their own, since the stock path costs ~1 s on a slow 2-core CPU.

A multilingual model is prompted with the turn's language: the session's,
or the one its language head finds in the same encoder output (one decoder
step, 10-25 ms on a 2-core CPU). :func:`identify_language` runs that head
alone on a window cut to the turn, for a model kept only to tell which
language a turn is in (see ``faster_whisper``).

A transcript that ends as a sentence does also says how sure the decoder was
of that end (:attr:`Decoded.continuation`): speech cut at a pause after "…
black holes and" often comes out as "… black holes." with the comma or the
"and" close behind the full stop, where a request the user really finished
leaves the decoder almost no doubt (see :func:`going_on_tokens`).
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ctranslate2
import numpy as np
from scipy.special import log_softmax

from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.pipeline.messages.transcription import Readings
from speech_to_speech.stt.base import PassAbandoned

SAMPLE_RATE = 16000  # Whisper's own input rate, which its log-mel frames assume
HOP = 160  # samples per log-mel frame
TAIL_S = 0.5  # digital silence appended to every turn before the window's zero padding
# The guard's limits. The log-probability and compression limits are faster-whisper's own
# thresholds for retrying a decode; the token budget is far above speech (3-5 tokens/s).
MIN_AVG_LOGPROB = -1.0
MAX_COMPRESSION_RATIO = 2.4
TOKENS_BASE = 16
TOKENS_PER_S = 8.0
MIN_REPEATED_WORDS = 3  # "for about an hour, for about an hour": a phrase said twice in a row
_WORD = re.compile(r"[a-z0-9']+", re.IGNORECASE)  # a word as the loop checks compare them (case aside)
MIN_RECURRING_WORDS = 6  # six words said twice anywhere (a false alarm costs only the stock path's time)
SENTENCE_ENDS = (".", "?", "!")
# A token that goes on with the sentence where the decoder put its final punctuation: a lowercase
# word (" and", " to"), or a comma, a dash, a trailing "...". Capitalised words are left out: in
# that place they are mostly the decoder starting the transcript over, not the speech going on.
_GOES_ON = re.compile(r"^ [a-z]|^ ?[,;:\-\u2013\u2014\u2026]|^ ?\.\.\.")
# Whether a hum reading of these words (text, mean log-probability, readings) could change what they decide.
HumCheck = Callable[[str, float, Readings], bool]
# A listener's hum as Whisper spells it. tiny.en writes a hum it cannot place as some word ("Let's..." or
# "Yeah." for a hummed "Mm.", "No, no, no." for "Mm-hmm."), yet reads the same speech as one of these nearly as
# readily; see :attr:`Decoded.hum_gap`. On 280 hums of hibari's voices one of these three was the likeliest
# hum 98 % of the time (" Mm-hmm." and " Mhm." add no more than 0.5 nats in 99.6 %); each one more costs a
# decoder pass.
HUMS = (" Mm.", " Hmm.", " Uh-huh.")
# Transcripts longer than this (in tokens), or words the decoder was this sure of (mean log-probability: the
# hums misread as words scored -0.46 to -1.1, and 2 in 3 passes of real interruptions -0.4 or better), are
# not a hum misread: their hum gap is not measured (it costs ~40 ms of a 2-core CPU).
HUM_MAX_TOKENS = 8
HUM_MIN_LOGPROB = -0.4


@dataclass(frozen=True)
class Decoded:
    text: str
    tokens: int
    avg_logprob: float
    hit_limit: bool  # the decode stopped at its token budget, not at end of text
    # Where the transcript ends with a sentence's final punctuation, the probability the decoder gave
    # there to the sentence going on instead (None: it ends otherwise, or nobody measured it).
    continuation: float | None = None
    language: str = "en"  # the language it was decoded in
    language_probability: float | None = None  # where the model's language head chose it: how sure it was
    # Where asked: the decoder's best readings of the same speech by beam search, most likely first.
    readings: Readings = ()
    # Where asked (``hum_check``), for short, doubtful words: how much less likely (log-probability of the whole
    # text and its end) the decoder finds the likeliest of HUMS than these words. A clear word leaves every hum
    # 8-20 nats behind; a hum spelled as a word, 0-6 (None: not measured).
    hum_gap: float | None = None


class WindowedWhisper:
    """Transcribes turns of up to ``window_s - tail_s`` seconds in a ``window_s`` encoder window."""

    def __init__(self, model: Any, window_s: float, tail_s: float = TAIL_S) -> None:
        from faster_whisper.transcribe import get_suppressed_tokens

        self.model = model
        self.multilingual = bool(model.model.is_multilingual)
        self.frames = 2 * round(window_s * SAMPLE_RATE / HOP / 2)  # the encoder halves the frames: keep it even
        self.tail = round(tail_s * SAMPLE_RATE)
        self._prompts: dict[str, tuple[Any, list[int]]] = {}
        tokenizer, _ = self._prompt("en")
        self.suppress = list(get_suppressed_tokens(tokenizer, [-1]))
        self.goes_on = going_on_tokens([tokenizer.decode([token]) for token in range(tokenizer.eot)])

    def _prompt(self, language: str) -> tuple[Any, list[int]]:
        """The tokenizer and the decoder prompt that transcribe ``language`` without timestamps."""
        if language not in self._prompts:
            from faster_whisper.tokenizer import Tokenizer

            tokenizer = Tokenizer(self.model.hf_tokenizer, self.multilingual, task="transcribe", language=language)
            self._prompts[language] = tokenizer, self.model.get_prompt(tokenizer, [], without_timestamps=True)
        return self._prompts[language]

    def fits(self, samples: FloatAudio) -> bool:
        """Whether the turn, its tail and faster-whisper's 160-sample pad lie inside the window."""
        return len(samples) + self.tail + HOP <= self.frames * HOP

    def features(self, samples: FloatAudio) -> np.ndarray:
        """(1, mels, frames): the turn and its silent tail as log-mel frames, then zero features."""
        return window_features(self.model, samples, self.tail, self.frames)

    def decode(self, samples: FloatAudio, beam_size: int = 1,
               still_wanted: Callable[[], bool] | None = None, language: str | None = None,
               readings: int = 0, hum_check: HumCheck | None = None) -> Decoded:
        """The turn's transcript; :class:`PassAbandoned` after the encoder if ``still_wanted`` says no.

        ``language``: what the turn is in (None: the model's language head says, English-only models: "en").
        ``readings``: also this many readings by beam search (a second decode of the same encoder output;
        the transcript itself stays the one of ``beam_size``).
        ``hum_check``: where it says a hum reading could change what short, doubtful English words decide,
        their :attr:`Decoded.hum_gap` too.
        """
        encoded = self.model.model.encode(ctranslate2.StorageView.from_array(self.features(samples)))
        if still_wanted is not None and not still_wanted():
            raise PassAbandoned("superseded while the encoder ran")
        probability = None
        if not self.multilingual:
            language = "en"
        elif language is None:
            language, probability = _most_likely(self.model.model.detect_language(encoded)[0])
        tokenizer, prompt = self._prompt(language)
        budget = TOKENS_BASE + int(TOKENS_PER_S * len(samples) / SAMPLE_RATE)
        max_length = min(self.model.max_length, len(prompt) + budget)
        result = self.model.model.generate(
            encoded, [prompt], beam_size=beam_size, max_length=max_length, return_scores=True,
            return_logits_vocab=True, suppress_blank=True, suppress_tokens=self.suppress,
        )[0]
        tokens = result.sequences_ids[0]
        # As faster-whisper recovers it (length penalty 1): the score is the mean over the tokens.
        avg_logprob = float(result.scores[0]) * len(tokens) / (len(tokens) + 1)
        text = tokenizer.decode(tokens)
        steps = result.logits[0][: len(tokens)] if len(result.logits[0]) >= len(tokens) else []
        # The doubt about a final mark was measured on English (going_on_tokens reads English words).
        continuation = measured_continuation(text, steps, self.goes_on) if language == "en" else None
        others = self._readings(encoded, prompt, max_length, tokenizer, readings)
        gap = None
        if hum_check is not None and language == "en" and self._may_be_hum(tokens, avg_logprob) and \
                hum_check(text, avg_logprob, others):
            gap = self._hum_gap(encoded, prompt, tokenizer, tokens, avg_logprob)
        return Decoded(text, len(tokens), avg_logprob, len(prompt) + len(tokens) >= max_length, continuation,
                       language, probability, others, gap)

    def _readings(self, encoded: Any, prompt: list[int], max_length: int, tokenizer: Any, count: int) -> Readings:
        if count < 2:
            return ()
        result = self.model.model.generate(
            encoded, [prompt], beam_size=count, num_hypotheses=count, max_length=max_length, return_scores=True,
            suppress_blank=True, suppress_tokens=self.suppress,
        )[0]
        # Scores as for the transcript: the mean log-probability over a reading's tokens.
        readings = ((tokenizer.decode(tokens).strip(), float(score) * len(tokens) / (len(tokens) + 1))
                    for tokens, score in zip(result.sequences_ids, result.scores, strict=True))
        return tuple(sorted(readings, key=lambda reading: -reading[1]))

    @staticmethod
    def _may_be_hum(tokens: list[int], avg_logprob: float) -> bool:
        return len(tokens) <= HUM_MAX_TOKENS and avg_logprob < HUM_MIN_LOGPROB

    def _hum_gap(self, encoded: Any, prompt: list[int], tokenizer: Any, tokens: list[int],
                 avg_logprob: float) -> float | None:
        """:attr:`Decoded.hum_gap` of ``tokens`` (None: the decoder gave too few steps to score a hum)."""
        hums = forced_logprobs(self.model.model, encoded, prompt,
                               [[*tokenizer.encode(hum), tokenizer.eot] for hum in HUMS], self.suppress)
        if hums is None:
            return None
        # The transcript's own: its mean log-probability was taken over its tokens and the end of text.
        return avg_logprob * (len(tokens) + 1) - max(hums)


def forced_logprobs(model: Any, encoded: Any, prompt: list[int], texts: list[list[int]],
                    suppress: list[int]) -> list[float] | None:
    """The log-probability a Whisper ``model`` gives each of ``texts`` (token ids ending in end-of-text) after
    ``prompt`` on this encoder output: the decoder forced along each (None where it gave too few steps)."""
    length = max(map(len, texts))
    padded = [prompt + text + [text[-1]] * (length - len(text)) for text in texts]  # one length for the batch
    if encoded.device == "cpu":  # one batch, the encoder output repeated: ~40 % quicker than one at a time
        batch = ctranslate2.StorageView.from_array(np.repeat(np.asarray(encoded), len(texts), axis=0))
        results = _forced(model, batch, padded, length, suppress)
    else:
        results = [result for sequence in padded for result in _forced(model, encoded, [sequence], length, suppress)]
    scores = []
    for text, result in zip(texts, results, strict=True):
        steps = result.logits[0]
        if len(steps) < len(text):
            return None
        scores.append(float(sum(_step_logprobs(steps[i])[token] for i, token in enumerate(text))))
    return scores


def _forced(model: Any, encoded: Any, prompts: list[list[int]], length: int, suppress: list[int]) -> list[Any]:
    # CTranslate2 returns the scores of a forced prefix's steps too, but counts the prefix twice against
    # max_length (4.x): twice its length leaves room for every step of it.
    return list(model.generate(encoded, prompts, beam_size=1, max_length=len(prompts[0]) + length,
                               return_logits_vocab=True, suppress_blank=True, suppress_tokens=suppress))


def _step_logprobs(scores: Any) -> np.ndarray:
    """Log-probabilities from one decoding step's scores (suppressed tokens: -inf, so probability 0)."""
    return log_softmax(np.asarray(scores, dtype=np.float64).ravel())


def window_features(model: Any, samples: FloatAudio, tail: int, frames: int) -> np.ndarray:
    """(1, mels, frames): ``samples`` and ``tail`` samples of silence as log-mel frames, then zero features."""
    padded = np.concatenate([np.asarray(samples, dtype=np.float32), np.zeros(tail, np.float32)])
    # faster-whisper drops the last frame, the one made of its own 160-sample pad; so do we.
    mel = model.feature_extractor(padded)[:, :-1]
    out = np.zeros((1, mel.shape[0], frames), dtype=np.float32)
    out[0, :, : mel.shape[1]] = mel[:, :frames]
    return out


def _most_likely(ranked: list[tuple[str, float]]) -> tuple[str, float]:
    """The first of the language head's ("<|fr|>", probability) pairs, as ("fr", probability)."""
    token, probability = ranked[0]
    return token[2:-2], float(probability)


def identify_language(model: Any, samples: FloatAudio, max_s: float, tail_s: float = TAIL_S) -> dict[str, float]:
    """The languages a multilingual ``model`` hears in ``samples``: code -> probability.

    The encoder sees a window cut to the turn (its first ``max_s`` seconds),
    not 30 s: on the benchmark clips that cost 30-110 ms instead of 130-270 ms
    on a loaded 2-core CPU and chose the same language.
    """
    tail = round(tail_s * SAMPLE_RATE)
    length = min(len(samples) + tail + HOP, round(max_s * SAMPLE_RATE))
    frames = 2 * max(1, math.ceil(length / HOP / 2))
    features = window_features(model, samples[: max(0, frames * HOP - tail - HOP)], tail, frames)
    encoded = model.model.encode(ctranslate2.StorageView.from_array(features))
    return {token[2:-2]: float(p) for token, p in model.model.detect_language(encoded)[0]}


def measured_continuation(text: str, step_logits: Sequence[Any], goes_on: np.ndarray) -> float | None:
    """:attr:`Decoded.continuation` of a transcript from the scores of the steps that wrote its tokens.

    Only a transcript that ends as a sentence has one: the doubt is measured at the step that wrote
    its final punctuation, the last of them (CTranslate2 also returns the end-of-text step's: leave it out).
    """
    if not step_logits or not ends_sentence(text):
        return None
    return going_on(np.asarray(step_logits[-1]), goes_on)


def going_on_tokens(pieces: list[str]) -> np.ndarray:
    """Which of these token texts (in token order) go on with a sentence where it could have ended."""
    return np.array([bool(_GOES_ON.match(piece)) for piece in pieces], dtype=np.bool_)


def going_on(logits: np.ndarray, goes_on: np.ndarray) -> float:
    """The probability that ``logits`` (one decoding step) give to the tokens ``goes_on`` marks."""
    probabilities = np.exp(_step_logprobs(logits))
    known = min(len(probabilities), len(goes_on))  # the model's vocabulary may be padded past the text tokens
    return float(probabilities[:known][goes_on[:known]].sum())


def ends_sentence(text: str) -> bool:
    """The transcript ends with a sentence's final punctuation (a trailing "..." is not one)."""
    end = text.rstrip().rstrip('"\')')
    return end.endswith(SENTENCE_ENDS) and not end.endswith("...")


def suspicious(decoded: Decoded) -> str | None:
    """Why a short-window transcript should not be trusted, or None."""
    if decoded.hit_limit:
        return "ran into the token budget"
    if decoded.avg_logprob < MIN_AVG_LOGPROB:
        return f"average log-probability {decoded.avg_logprob:.2f}"
    text = decoded.text.strip()
    if text and compression_ratio(text) > MAX_COMPRESSION_RATIO:
        return "repetitive text"
    if repeated_phrase(text):
        return "a phrase repeated"
    return None


def restarted(text: str) -> str | None:
    """The transcript before the decoder began it again, or None if it did not.

    Past the last word, in the window's padding, Whisper tiny.en often starts
    the transcript over ("Can you help me write a short email to my boss? Can
    you help me write a short"; seen on hibari requests as the server cut
    them). What follows the restart is then the transcript's own beginning
    (at least ``MIN_REPEATED_WORDS`` words, no more than came before it), so
    the words before it are the speech, whole. A loop of anything else, or a
    repeat inside the speech, is not a restart: those still take the stock path.
    """
    spans = [(m.group().lower(), m.start()) for m in _WORD.finditer(text)]
    words = [word for word, _ in spans]
    for start in range((len(words) + 1) // 2, len(words) - MIN_REPEATED_WORDS + 1):
        if start >= MIN_REPEATED_WORDS and words[start:] == words[: len(words) - start]:
            return text[: spans[start][1]].rstrip()
    return None


def compression_ratio(text: str) -> float:
    data = text.encode()
    return len(data) / len(zlib.compress(data))


def repeated_phrase(text: str) -> bool:
    """Whether words come back as a loop does (case and punctuation aside).

    ``MIN_REPEATED_WORDS`` or more words twice in a row ("for about an hour,
    for about an hour"), or ``MIN_RECURRING_WORDS`` anywhere twice: a loop
    the decoder left half-way ("How far away is the moon from the earth. How
    far away is the moon").
    """
    words = [m.group().lower() for m in _WORD.finditer(text)]
    for size in range(MIN_REPEATED_WORDS, len(words) // 2 + 1):
        for start in range(len(words) - 2 * size + 1):
            if words[start: start + size] == words[start + size: start + 2 * size]:
                return True
    seen: dict[tuple[str, ...], int] = {}
    for start in range(len(words) - MIN_RECURRING_WORDS + 1):
        gram = tuple(words[start: start + MIN_RECURRING_WORDS])
        if start >= seen.setdefault(gram, start) + MIN_RECURRING_WORDS:
            return True
    return False
