"""The turn detector behind the VAD: is a pause the end of the user's turn?

``--turn_detector silence`` is the classic rule: a turn ends after
``silence_duration_ms`` of silence. ``smart-turn`` asks the Smart Turn model
whether the speech so far, followed by a pause of ``--turn_pause_ms``, *sounds*
finished. It asks as the pause begins, on the pause lengthened to that by
repeating its first silence (:func:`paused_for`), so
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
skips it. That is the pause's own number in its turn (see
:mod:`speech_to_speech.turns.controller`), not the unit's CancelScope: the
scope's generation moves on whenever a speculative reply is replaced, which
has nothing to do with whether the user is still pausing (tied to it, a third
of the benchmark questions lost their verdict).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.config import PipelineCount, TurnSettings
from speech_to_speech.cpu import gate as cpu_gate
from speech_to_speech.cpu import usable_cpu_count
from speech_to_speech.cpu.gate import CpuGate
from speech_to_speech.pipeline.messages.input_audio import AudioChunk
from speech_to_speech.pipeline.messages.turn_taking import TurnVerdict
from speech_to_speech.pipeline.queues import Sink
from speech_to_speech.pool_size import pool_size
from speech_to_speech.turns.rules import (  # noqa: F401  (the rules' old import path, kept for one release)
    CONTINUATION_WORDS,
    EAGERNESS,
    MAX_CONTINUATION,
    OPEN_ENDED_WORDS,
    Eagerness,
    eagerness,
    ends_mid_phrase,
    judged_finished,
    reads_finished,
)
from speech_to_speech.vad.smart_turn import SmartTurnModel, packaged_model_path

log = logging.getLogger(__name__)

SMART_TURN = "smart-turn"
SILENCE = "silence"


def paused_for(chunks: list[AudioChunk], missing_ms: int) -> FloatAudio:
    """The turn's audio with its trailing pause made ``missing_ms`` longer, by repeating its last chunk.

    The last chunk is silence (the pause has begun): repeating it keeps the
    room's own noise floor, where digital zeros would sound like no microphone.
    """
    samples = np.concatenate([c.samples for c in chunks])
    missing = max(0, missing_ms) * PIPELINE_RATE // 1000
    if not missing:
        return samples
    return np.concatenate([samples, np.resize(chunks[-1].samples, missing)])


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
            still_wanted: Callable[[], bool], reply_to: Sink[TurnVerdict]) -> None:
        """Score ``samples`` off the caller's thread; a :class:`TurnVerdict` arrives on ``reply_to``.

        A question that is no longer wanted when a worker picks it up is
        skipped; it still gets a verdict (with no probability), so nothing
        waits for an answer that will not come.
        """
        self._pool.submit(self._score, samples, item_id, pause, still_wanted, reply_to)

    def _score(self, samples: npt.NDArray[Any], item_id: str | None, pause: int,
               still_wanted: Callable[[], bool], reply_to: Sink[TurnVerdict]) -> None:
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


def load_turn_detector(settings: TurnSettings, num_pipelines: PipelineCount) -> TurnDetector | None:
    """The detector ``--turn_detector`` asks for, or None for the silence rule; a worker per unit, at most a core each.

    Missing weights are not fatal: the server runs with the silence rule and says so once.
    """
    if settings.detector == SILENCE:
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
    return TurnDetector(model, workers=max(1, min(pool_size(num_pipelines).units, usable_cpu_count())),
                        gate=cpu_gate.shared())
