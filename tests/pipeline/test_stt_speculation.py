"""The STT's speculative passes: a superseded pass is skipped or stopped, and a turn reuses only the pass it names."""

from __future__ import annotations

import queue
import time
from typing import Any

import numpy as np

from speech_to_speech.audio.samples import FloatAudio
from speech_to_speech.pipeline.cancel_scope import CancelScope
from speech_to_speech.pipeline.handler import HandlerContext
from speech_to_speech.pipeline.messages.input_audio import Utterance
from speech_to_speech.pipeline.messages.transcription import Transcript
from speech_to_speech.pipeline.session_config import ConfigHolder
from speech_to_speech.stt.base import PassAbandoned, STTHandler
from speech_to_speech.testing.engine import scripted_settings, speech


class CountingSTT(STTHandler):
    """Hears how long the audio is, and counts its passes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.passes = 0

    def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
        self.passes += 1
        return f"{len(samples)} samples", "en"


def stt() -> CountingSTT:
    context = HandlerContext(CancelScope(), ConfigHolder())
    return CountingSTT(context, queue.Queue(), queue.Queue(), model=None, settings=scripted_settings().stt)


def utterance(seconds: float, *, speculation: int = 0, reuses: int = 0, item_id: str = "item_1") -> Utterance:
    return Utterance(speech(seconds), 0, int(seconds * 1000), item_id=item_id, speculation=speculation,
                     reuses=reuses)


def run(handler: CountingSTT, *items: Utterance) -> list[Transcript]:
    """Queue ``items`` as the VAD would, then let the STT take them one by one."""
    for item in items:
        handler.queue_in.put(item)
    out: list[Transcript] = []
    while not handler.queue_in.empty():
        out += [o for o in handler.outputs(handler.queue_in.get_nowait()) if isinstance(o, Transcript)]
    return out


def test_a_speculative_pass_with_a_newer_one_of_its_turn_waiting_is_skipped() -> None:
    handler = stt()
    out = run(handler, utterance(1.0, speculation=1), utterance(1.5, speculation=2))
    assert [(t.speculation, t.text) for t in out] == [(2, "24000 samples")]
    assert handler.passes == 1


def test_the_turns_end_reuses_the_pass_it_names() -> None:
    handler = stt()
    out = run(handler, utterance(1.0, speculation=1))
    out += run(handler, utterance(1.2, reuses=1))
    assert [(t.final, t.text) for t in out] == [(False, "16000 samples"), (True, "16000 samples")]
    assert handler.passes == 1


def test_a_turn_whose_last_speculation_was_skipped_is_transcribed_whole() -> None:
    # The turn ended while its second speculation still waited: that one is superseded, and the
    # first pass (shorter audio) must not be taken for the turn's words.
    handler = stt()
    out = run(handler, utterance(1.0, speculation=1))
    out += run(handler, utterance(1.5, speculation=2), utterance(1.6, reuses=2))
    assert [(t.final, t.text) for t in out] == [(False, "16000 samples"), (True, "25600 samples")]
    assert handler.passes == 2


def test_other_turns_do_not_supersede_a_speculation() -> None:
    handler = stt()
    out = run(handler, utterance(1.0, speculation=1), utterance(0.5, item_id="item_2"))
    assert [t.item_id for t in out] == ["item_1", "item_2"]
    assert np.array_equal([t.final for t in out], [False, True])


class TwoPhaseSTT(STTHandler):
    """Asks :meth:`still_wanted` between its two phases, as faster-whisper does after its encoder;
    ``meanwhile`` is what reaches the STT's queue while the first phase runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.meanwhile: list[Utterance] = []
        self.finished = 0

    def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
        while self.meanwhile:
            self.queue_in.put(self.meanwhile.pop(0))
        if not self.still_wanted():
            raise PassAbandoned("superseded")
        self.finished += 1
        return f"{len(samples)} samples", "en"


def two_phase_stt() -> TwoPhaseSTT:
    context = HandlerContext(CancelScope(), ConfigHolder())
    return TwoPhaseSTT(context, queue.Queue(), queue.Queue(), model=None, settings=scripted_settings().stt)


def test_a_speculative_pass_superseded_while_it_runs_stops_and_gives_no_words() -> None:
    handler = two_phase_stt()
    handler.meanwhile = [utterance(1.5, speculation=2)]
    out = run(handler, utterance(1.0, speculation=1))
    assert [(t.speculation, t.text) for t in out] == [(2, "24000 samples")]
    assert handler.finished == 1
    # The turn's end names the pass that ran to its end, and reuses it.
    out = run(handler, utterance(1.6, reuses=2))
    assert [(t.final, t.text) for t in out] == [(True, "24000 samples")] and handler.finished == 1


def test_a_stopped_pass_is_never_taken_for_the_turn_s_words() -> None:
    # The client committed the turn while its second pass ran: the commit supersedes that pass, and
    # the turn is transcribed whole (not from the stopped pass, nor from an older one).
    handler = two_phase_stt()
    run(handler, utterance(0.5, speculation=1))
    handler.meanwhile = [utterance(1.2)]
    out = run(handler, utterance(1.0, speculation=2))
    assert [(t.final, t.text) for t in out] == [(True, "19200 samples")]


def test_a_pass_the_turn_s_end_will_reuse_runs_to_its_end() -> None:
    # The turn ended (with no speech after this pause) while its pass ran: the pass's words are the turn's.
    handler = two_phase_stt()
    handler.meanwhile = [utterance(1.1, reuses=1)]
    out = run(handler, utterance(1.0, speculation=1))
    assert [(t.final, t.text) for t in out] == [(False, "16000 samples"), (True, "16000 samples")]
    assert handler.finished == 1


def test_neither_another_turn_nor_a_turn_s_own_end_stops_what_it_does_not_supersede() -> None:
    handler = two_phase_stt()
    handler.meanwhile = [utterance(0.5, item_id="item_2")]
    out = run(handler, utterance(1.0, speculation=1))
    assert [(t.item_id, t.final) for t in out] == [("item_1", False), ("item_2", True)]
    # A turn's final pass always runs to its end, whatever waits behind it.
    handler.meanwhile = [utterance(0.4, item_id="item_3", speculation=1)]
    out = run(handler, utterance(1.0, item_id="item_3"))
    assert [(t.item_id, t.final, t.text) for t in out] == [("item_3", True, "16000 samples"),
                                                          ("item_3", False, "6400 samples")]


def test_every_local_pass_is_urgent_work_for_the_cpu_gate() -> None:
    """A user waits on each pass: other sessions' long decodes give way while it runs (cpu/gate.py)."""
    from speech_to_speech.cpu import gate as cpu_gate

    seen: list[bool] = []

    class Watching(CountingSTT):
        def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
            seen.append(cpu_gate.shared().busy)
            return super().transcribe(samples, language)

    context = HandlerContext(CancelScope(), ConfigHolder())
    handler = Watching(context, queue.Queue(), queue.Queue(), model=None, settings=scripted_settings().stt)
    run(handler, utterance(1.0, speculation=1))
    run(handler, utterance(1.2))
    assert seen == [True, True] and not cpu_gate.shared().busy
    Watching.uses_local_cpu = False  # a backend that only waits on a remote service
    seen.clear()
    run(handler, utterance(1.0))
    assert seen == [False]


def interim(seconds: float, item_id: str = "item_1") -> Utterance:
    return Utterance(speech(seconds), 0, int(seconds * 1000), item_id=item_id, interim=True)


def test_an_interim_pass_gives_words_that_are_not_the_turn_s() -> None:
    handler = stt()
    (heard,) = run(handler, interim(0.6))
    assert (heard.text, heard.final, heard.speculative) == ("9600 samples", False, False)


def test_an_interim_pass_with_anything_newer_of_its_turn_waiting_is_skipped() -> None:
    for newer in (interim(0.9), utterance(1.0, speculation=1), utterance(1.2)):
        handler = stt()
        out = run(handler, interim(0.6), newer)
        assert handler.passes == 1 and [t.text for t in out] == [f"{len(newer.samples)} samples"]


def test_an_interim_pass_is_background_work_that_idle_work_waits_for_and_a_probe_is_urgent() -> None:
    """Not urgent (no user waits on it), but the call writer's read ahead must not slow it (cpu/gate.py)."""
    from speech_to_speech.cpu import gate as cpu_gate

    seen: list[tuple[bool, bool]] = []

    class Watching(CountingSTT):
        def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
            seen.append((cpu_gate.shared().busy, cpu_gate.shared().idle))
            return super().transcribe(samples, language)

    context = HandlerContext(CancelScope(), ConfigHolder())
    handler = Watching(context, queue.Queue(), queue.Queue(), model=None, settings=scripted_settings().stt)
    run(handler, interim(0.6))
    run(handler, Utterance(speech(0.6), 0, 600, item_id="item_2", interim=True, probe=True))
    assert seen == [(False, False), (True, False)] and cpu_gate.shared().idle
    Watching.uses_local_cpu = False  # a backend that only waits on a remote service takes no CPU of ours
    seen.clear()
    run(handler, interim(0.9, item_id="item_3"))
    assert seen == [(False, True)]


def test_an_stt_slower_than_the_interim_budget_makes_no_interim_passes() -> None:
    class Slow(CountingSTT):
        def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
            time.sleep(0.06)
            return super().transcribe(samples, language)

    context = HandlerContext(CancelScope(), ConfigHolder())
    handler = Slow(context, queue.Queue(), queue.Queue(), model=None,
                   settings=scripted_settings(interim_max_pass_ms=50).stt)
    assert len(run(handler, interim(0.6))) == 1  # the first pass measures the STT
    assert run(handler, interim(0.9)) == [] and handler.passes == 1  # it took 60 ms: no more while it is slow
    assert [t.final for t in run(handler, utterance(1.2))] == [True]  # the turn's own pass always runs
    # A probe (speech over the answer, judged by its words) is done however slow the STT is, newer work or not.
    probe = Utterance(speech(0.6), 0, 600, item_id="item_2", interim=True, probe=True)
    out = run(handler, probe, interim(0.9, item_id="item_2"))
    assert [(t.text, t.final) for t in out] == [("9600 samples", False)]


def test_a_failed_interim_pass_is_retried_at_the_turn_s_end_and_completes_nothing() -> None:
    class Failing(CountingSTT):
        def transcribe(self, samples: FloatAudio, language: str | None) -> tuple[str, str | None]:
            raise RuntimeError("decoder exploded")

    context = HandlerContext(CancelScope(), ConfigHolder())
    handler = Failing(context, queue.Queue(), queue.Queue(), model=None, settings=scripted_settings().stt)
    handler.queue_in.put(interim(0.6))
    out = list(handler.outputs(handler.queue_in.get_nowait()))
    assert not any(isinstance(o, Transcript) for o in out)  # the turn is not over
    assert [getattr(o, "retried", None) for o in out] == [True]
