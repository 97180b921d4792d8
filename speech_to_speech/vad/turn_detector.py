"""The turn detector behind the VAD: is a pause the end of the user's turn?

``--turn_detector silence`` is the classic rule: a turn ends after
``silence_duration_ms`` of silence. ``smart-turn`` asks the Smart Turn model
whether the speech so far, followed by a pause of ``--turn_pause_ms``, *sounds*
finished. It asks as the pause begins, on the pause lengthened to that by
repeating its first silence (:func:`speech_to_speech.vad.base.paused_for`), so
the verdict does not wait behind the pause nor compete with the LLM for a
core: a finished turn ends once it has paused that long (and its reply can
play), an unfinished one waits for more speech, up to the longest silence its
eagerness allows, and then ends anyway. A session picks the detector with its
``turn_detection.type``:
``semantic_vad`` (the server's default when the model is installed) uses the
model, ``server_vad`` the silence rule.

Scoring runs on a small thread pool shared by every unit of the process (the
model is loaded once), never on the VAD thread, so audio intake never waits
for it: the VAD posts the audio of a pause and the verdict comes back on the
VAD's own input queue, where it is matched to the pause it was asked about.

A question is cancelled with its pause: when the user speaks again, the turn
ends another way, or the session ends, a worker that has not started on it
skips it. That is the VAD's own pause count, not the unit's CancelScope: the
scope's generation moves on whenever a speculative reply is replaced, which
has nothing to do with whether the user is still pausing (tied to it, a third
of the benchmark questions lost their verdict).
"""

from __future__ import annotations

import logging
import queue
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy.typing as npt

from speech_to_speech.config import ServerSettings
from speech_to_speech.cpu import gate as cpu_gate
from speech_to_speech.cpu import usable_cpu_count
from speech_to_speech.cpu.gate import CpuGate
from speech_to_speech.pipeline.messages import TurnVerdict
from speech_to_speech.pipeline.session_config import TurnDetection
from speech_to_speech.pool_size import pool_size
from speech_to_speech.vad.smart_turn import SmartTurnModel, packaged_model_path

log = logging.getLogger(__name__)

SMART_TURN = "smart-turn"
SILENCE = "silence"


@dataclass(frozen=True)
class Eagerness:
    """How readily a pause ends the turn: the scores that count as finished, and the longest wait."""

    finished_at: float  # probability at or above which the turn is finished
    max_silence_scale: float  # times --max_turn_silence_ms an unfinished turn may stay silent
    # The probability a turn needs when its words do not read as a whole sentence ("… do I need for?",
    # "… thank you very much in"): the model scored such mid-sentence cuts 0.75-0.97.
    unread_finished_at: float
    # Whether a turn judged finished waits out a pause between two sentences (--finished_pause_ms) before
    # it ends, or ends at --turn_pause_ms: "high" answers sooner and may answer a request's first sentence.
    waits_between_sentences: bool = True


# OpenAI's semantic_vad eagerness: "low" lets the user take their time, "high" answers sooner.
EAGERNESS: dict[str, Eagerness] = {
    "low": Eagerness(finished_at=0.8, max_silence_scale=1.5, unread_finished_at=0.99),
    "medium": Eagerness(finished_at=0.5, max_silence_scale=1.0, unread_finished_at=0.98),
    "auto": Eagerness(finished_at=0.5, max_silence_scale=1.0, unread_finished_at=0.98),
    "high": Eagerness(finished_at=0.3, max_silence_scale=0.5, unread_finished_at=0.9,
                      waits_between_sentences=False),
}


# Words after which an English utterance is not over: articles, possessives, conjunctions, the
# infinitive "to", "of", and fillers. A sentence can end with most prepositions ("what is it for?"),
# so those are not here.
CONTINUATION_WORDS = frozenset({
    "a", "an", "the", "my", "your", "his", "her", "our", "their", "its", "and", "or", "but", "nor",
    "because", "if", "unless", "whether", "although", "than", "to", "of", "um", "uh", "er", "erm", "uhm",
})


# Words a sentence can end on but a phrase left hanging usually does: prepositions, modal and
# auxiliary verbs, subject pronouns, question and relative words. They do not veto a turn that
# sounds finished ("what is it for?"), but they do not end one that sounds unfinished either.
# Particles that end phrasal verbs ("turn it off", "log in") are not here.
OPEN_ENDED_WORDS = CONTINUATION_WORDS | frozenset({
    "about", "above", "across", "after", "against", "along", "among", "at", "before", "behind", "below",
    "beneath", "beside", "between", "beyond", "by", "during", "except", "for", "from", "into", "like",
    "near", "onto", "since", "through", "toward", "towards", "under", "until", "upon", "with", "within",
    "without", "can", "could", "will", "would", "shall", "should", "may", "might", "must", "do", "does",
    "did", "is", "are", "was", "were", "am", "be", "been", "being", "have", "has", "had", "i", "you",
    "he", "she", "we", "they", "who", "whom", "whose", "which", "that", "what", "where", "when", "why",
    "how", "so", "then",
})


# The STT's doubt above which its final punctuation is not taken for the end of a sentence (see
# reads_finished). Whisper tiny.en gave 0.21-0.54 to the comma or the word it left out of speech cut
# at a mid-sentence pause ("… black holes [and]", "… tomorrow morning [to]"), and at most 0.09 at the
# end of 94 requests the user had finished (docs/benchmarks/README.md, "Turn detection, sixth round").
MAX_CONTINUATION = 0.2


def reads_finished(transcript: str, continuation: float | None = None) -> bool:
    """The words end as a whole sentence does: final punctuation, after a word a phrase rarely stops on,
    and (where the STT measured it) little ``continuation``: its own doubt that the speech ended there.

    Stricter than the opposite of :func:`ends_mid_phrase`: it is the evidence that overrides a
    turn that *sounds* unfinished, so it must not take "… maybe we could." for a finished request,
    nor "… black holes." where Whisper left out the "and" the speech ended on.
    """
    text = transcript.strip()
    if not text.endswith((".", "?", "!")) or text.endswith("..."):
        return False
    if continuation is not None and continuation >= MAX_CONTINUATION:
        return False
    last = _last_word(text)
    return bool(last) and last not in OPEN_ENDED_WORDS


def ends_mid_phrase(transcript: str) -> bool:
    """The words stop where a sentence cannot: after "the", "and", "to", an "um", or trailing off."""
    text = transcript.strip()
    if not text:
        return False
    if text.endswith(("...", "…", ",", "-", "—")):
        return True
    return _last_word(text) in CONTINUATION_WORDS


def judged_finished(probability: float, words: str | None, level: Eagerness,
                    continuation: float | None = None) -> bool:
    """Whether a pause that scored ``probability``, after ``words`` (and the STT's ``continuation``,
    see :func:`reads_finished`), ends the turn.

    It must sound finished, and its words (when a speculative pass heard
    some) must not stop mid-phrase. Words that do not read as a whole
    sentence either (no final punctuation, or a last word phrases hang on)
    need a confident score: on speech cut mid-sentence the model is often
    sure of the wrong answer, the transcript less often.
    """
    if probability < level.finished_at:
        return False
    if not words or not words.strip():
        return True  # nothing heard to weigh: the model decides
    if ends_mid_phrase(words):
        return False
    return reads_finished(words, continuation) or probability >= level.unread_finished_at


def _last_word(text: str) -> str:
    """The last word of ``text``, lowercased, without punctuation ("" when there is none)."""
    words = re.sub(r"[^\w']+", " ", text).split()
    return words[-1].lower() if words else ""


def eagerness(turn_detection: TurnDetection | None) -> Eagerness:
    return EAGERNESS[(turn_detection.eagerness if turn_detection else None) or "auto"]


class TurnDetector:
    """The Smart Turn model and the pool that runs it, shared by every unit of a process."""

    name = SMART_TURN

    def __init__(self, model: SmartTurnModel, workers: int, gate: CpuGate | None = None) -> None:
        self.model = model
        # A verdict is urgent work (cpu/gate.py): the pause's STT pass runs beside it, and a prompt read
        # ahead or another session's long decode on the same cores would slow both.
        self.gate = gate
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="smart-turn")

    def ask(self, samples: npt.NDArray[Any], *, item_id: str | None, pause: int,
            still_wanted: Callable[[], bool], reply_to: queue.Queue[Any]) -> None:
        """Score ``samples`` off the caller's thread; a :class:`TurnVerdict` arrives on ``reply_to``.

        A question that is no longer wanted when a worker picks it up is
        skipped; it still gets a verdict (with no probability), so nothing
        waits for an answer that will not come.
        """
        self._pool.submit(self._score, samples, item_id, pause, still_wanted, reply_to)

    def _score(self, samples: npt.NDArray[Any], item_id: str | None, pause: int,
               still_wanted: Callable[[], bool], reply_to: queue.Queue[Any]) -> None:
        probability: float | None = None
        started = time.perf_counter()
        if still_wanted():
            try:
                with self.gate.urgent(1) if self.gate is not None else nullcontext():
                    probability = self.model.probability(samples)
            except Exception:  # a failed decision falls back to the silence rule, it never stalls a turn
                log.exception("the turn detector failed; this pause is judged by silence")
        reply_to.put(TurnVerdict(item_id, pause, probability, (time.perf_counter() - started) * 1000.0))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def load_turn_detector(settings: ServerSettings) -> TurnDetector | None:
    """The detector ``--turn_detector`` asks for, or None for the silence rule.

    Missing weights are not fatal: the server runs with the silence rule and says so once.
    """
    if settings.turn_detector == SILENCE:
        return None
    path = Path(settings.smart_turn_model) if settings.smart_turn_model else packaged_model_path()
    if path is None or not path.is_file():
        log.warning(
            "Smart Turn weights not found (%s); turns end by silence alone. Install them with "
            "`pip install --no-deps pipecat-ai==1.14.0` (or pass --smart_turn_model FILE), or run with "
            "--turn_detector silence to silence this warning.",
            path or "no pipecat-ai package",
        )
        return None
    started = time.perf_counter()
    model = SmartTurnModel(path)
    log.info("turn detector smart-turn loaded from %s in %.2f s", path, time.perf_counter() - started)
    # One scoring per pause and session; more workers than cores would only queue on the CPU.
    return TurnDetector(model, workers=max(1, min(pool_size(settings.num_pipelines).units, usable_cpu_count())),
                        gate=cpu_gate.shared())
