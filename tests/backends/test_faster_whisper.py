"""faster-whisper with the packaged Whisper tiny.en: it hears what hibari says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import ctranslate2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from speech_to_speech.audio.wav import read_wav
from speech_to_speech.bench.audio import voiced_bounds
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.input_audio import Utterance
from speech_to_speech.pipeline.messages.transcription import Transcript
from speech_to_speech.pipeline.session_config import RuntimeConfig
from speech_to_speech.stt.base import Heard
from speech_to_speech.stt.faster_whisper import (
    FasterWhisperSTT,
    _transcribe,
    packaged_model_path,
    short_window,
    transcribe_windowed,
)
from speech_to_speech.stt.whisper_window import (
    HUMS,
    Decoded,
    WindowedWhisper,
    ends_sentence,
    forced_logprobs,
    repeated_phrase,
    restarted,
    suspicious,
)
from speech_to_speech.turns.listener_words import HUM_GAP
from speech_to_speech.vad.turn_detector import MAX_CONTINUATION, reads_finished

pytestmark = pytest.mark.real_models


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def test_packaged_model_is_a_ctranslate2_folder() -> None:
    folder = packaged_model_path()
    assert (folder / "model.bin").is_file() and (folder / "tokenizer.json").is_file()


def test_transcribes_a_spoken_sentence(whisper: Any, spoken: Any, sentence: str, make_handler: Any) -> None:
    stt = make_handler(FasterWhisperSTT, whisper)
    audio = spoken(sentence)
    (transcript,) = stt.process(Utterance(audio, 0, 1000, item_id="item_1"))
    assert isinstance(transcript, Transcript) and transcript.final
    assert transcript.item_id == "item_1" and transcript.language == "en"
    assert transcript.audio_seconds == pytest.approx(len(audio) / 16000)
    assert {"quick", "brown", "fox", "lazy", "dog", "near"} <= words(transcript.text)


def test_english_only_model_ignores_another_language(whisper: Any, spoken: Any, make_handler: Any) -> None:
    # Without its language check (tests/backends/test_whisper_languages.py has it on).
    stt = make_handler(FasterWhisperSTT, whisper, ServerSettings(stt_language_check=""), RuntimeConfig(language="fr"))
    assert stt.language() == "fr"
    heard = stt.transcribe(spoken("Please turn on the kitchen lights."), stt.language())
    assert heard.language == "en"
    assert {"kitchen", "lights"} <= words(heard.text)


def test_empty_and_silent_turns_give_no_words(whisper: Any, make_handler: Any) -> None:
    stt = make_handler(FasterWhisperSTT, whisper)
    assert stt.transcribe(np.zeros(0, np.float32), None) == Heard("", None)
    heard = stt.transcribe(np.zeros(16000, np.float32), None)
    assert len(words(heard.text)) <= 1  # Whisper may hallucinate a filler word on pure silence, never a sentence


SILENCE = np.zeros(4800, np.float32)  # 300 ms: what the VAD keeps around a turn


@pytest.mark.parametrize("text", [
    "Please set a timer for ten minutes.",
    "Um, can you suggest a quick workout that I can do at home without any equipment?",
    "What time is it right now?",
])
def test_short_window_hears_what_the_full_window_hears(whisper: Any, spoken: Any, text: str) -> None:
    said = np.concatenate([SILENCE, trimmed(spoken(text)), SILENCE])
    decoded = WindowedWhisper(whisper, ServerSettings().stt.window_s).decode(said)
    assert suspicious(decoded) is None
    full = _transcribe(whisper, said, "en", 1).text
    assert spoken_words(decoded.text) == spoken_words(full)


def test_the_guard_catches_a_short_window_that_loops(whisper: Any, spoken: Any) -> None:
    # No silent tail and no silence after the last word: tiny.en repeats this sentence to its token budget.
    said = trimmed(spoken("What time is it right now?"))
    decoded = WindowedWhisper(whisper, 4.0, tail_s=0.0).decode(said)
    # The pinned model is deterministic: if it stops looping here, pick another input rather than skip.
    assert repeated_phrase(decoded.text), f"the model no longer loops on this input: {decoded.text!r}"
    assert suspicious(decoded) is not None
    # It began the sentence again: the words before the restart are kept, and they are what the stock path hears.
    heard = transcribe_windowed(WindowedWhisper(whisper, 4.0, tail_s=0.0), said, 1)
    assert heard is not None and spoken_words(heard[0]) == spoken_words(_transcribe(whisper, said, "en", 1)[0])


def test_a_rejected_short_window_falls_back_to_the_stock_path(
    whisper: Any, spoken: Any, make_handler: Any
) -> None:
    class Looping:
        def fits(self, samples: Any) -> bool:
            return True

        def decode(self, samples: Any, beam_size: int = 1, still_wanted: Any = None, language: Any = None,
                   readings: int = 0, hum_check: Any = None) -> Decoded:
            return Decoded(" Turn it off. Turn it off. Turn it off. Turn it off.", 224, -0.1, True)

    stt = make_handler(FasterWhisperSTT, whisper)
    stt._window, stt._window_built = Looping(), True
    said = np.concatenate([SILENCE, trimmed(spoken("Turn off the lights in the kitchen.")), SILENCE])
    heard = stt.transcribe(said, None)
    assert heard == _transcribe(whisper, said, "en", 1)  # the stock path measures no continuation
    assert heard.avg_logprob is not None and -2.0 < heard.avg_logprob < 0.0  # but says how sure it was
    assert {"lights", "kitchen"} <= words(heard.text)


def test_a_speculative_pass_superseded_while_the_encoder_runs_is_not_decoded(
    whisper: Any, spoken: Any, make_handler: Any
) -> None:
    """The user spoke on and paused again meanwhile: the newer pass waits, this one's words are of no use."""
    stt = make_handler(FasterWhisperSTT, whisper)
    said = np.concatenate([SILENCE, trimmed(spoken("Turn off the lights in the kitchen.")), SILENCE])
    asked: list[bool] = []
    newer = Utterance(said, 0, 3000, item_id="item_1", speculation=2)

    def the_vad_queues_a_newer_pass() -> bool:
        stt.queue_in.put(newer)  # as the VAD would, while the encoder ran
        asked.append(FasterWhisperSTT.still_wanted(stt))
        return asked[-1]

    stt.still_wanted = the_vad_queues_a_newer_pass
    assert list(stt.process(Utterance(said, 0, 2500, item_id="item_1", speculation=1))) == []
    assert asked == [False]  # asked once, between the encoder and the decoder
    # The newer pass is transcribed in full, and the turn's end may reuse it.
    stt.still_wanted = lambda: FasterWhisperSTT.still_wanted(stt)
    (transcript,) = stt.process(stt.queue_in.get_nowait())
    assert transcript.speculation == 2 and {"lights", "kitchen"} <= words(transcript.text)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "turns"


@pytest.mark.parametrize(("fixture", "cut"), [
    # Speculative passes of the server (16 kHz, as its VAD cut them) at a 1.2 s and a 1.1 s pause of
    # the fragments corpus, after "... black holes and" and "... tomorrow morning to", and at the end of
    # a whole request. Where Whisper wrote a full stop on the cut ones (0.46-0.54 of doubt on three
    # instruction sets of CTranslate2), another CPU's kernels may let the "and" win outright.
    ("cut_black_holes_and.wav", True), ("cut_tomorrow_morning_to.wav", True), ("whole_robot_story.wav", False),
])
def test_the_short_window_says_how_sure_it_is_of_its_full_stop(
    whisper: Any, make_handler: Any, fixture: str, cut: bool
) -> None:
    samples, _ = read_wav(FIXTURES / fixture, 16000)
    decoded = WindowedWhisper(whisper, ServerSettings().stt.window_s).decode(samples)
    if cut:
        # Either way the cut words must not read as finished: doubted, or left unpunctuated.
        assert not reads_finished(decoded.text, decoded.continuation), decoded
        if ends_sentence(decoded.text):
            assert decoded.continuation is not None and decoded.continuation >= MAX_CONTINUATION, decoded
    else:
        assert ends_sentence(decoded.text) and reads_finished(decoded.text), decoded
        assert decoded.continuation is not None and decoded.continuation < MAX_CONTINUATION / 2, decoded
    # A speculative pass hands the doubt on with its words, for the turn detector to weigh.
    stt = make_handler(FasterWhisperSTT, whisper)
    (transcript,) = stt.process(Utterance(samples, 0, 2000, item_id="item_1", speculation=1))
    assert transcript.text == decoded.text.strip() and transcript.continuation == decoded.continuation


@pytest.mark.parametrize(("text", "cut_ms"), [
    # Phrases cut where they hang: tiny.en ends some with a full stop, some with "..." or nothing at
    # all, and which depends on the CPU's kernels (on one CPU "... going to rain" cut came out
    # "... going to run."). Whatever it writes, the doubt is measured exactly where a sentence ends.
    ("I'd like to know whether it's going to rain", 350),
    ("I need to buy some milk and eggs and", 0),
    ("Tell me a story about a dragon and a", 0),
    ("Could you please turn off the", 0),
])
def test_a_continuation_is_measured_exactly_where_the_words_end_as_a_sentence(
    whisper: Any, spoken: Any, text: str, cut_ms: int
) -> None:
    said = trimmed(spoken(text))
    said = np.concatenate([said[: len(said) - cut_ms * 16], SILENCE])
    decoded = WindowedWhisper(whisper, ServerSettings().stt.window_s).decode(said)
    assert set(spoken_words(text)[:3]) <= set(spoken_words(decoded.text)), decoded.text
    assert (decoded.continuation is not None) == ends_sentence(decoded.text), decoded
    if decoded.continuation is not None:
        assert 0.0 <= decoded.continuation <= 1.0


BOSS = " Can you help me write a short email to my boss? I need to take Friday off."


def test_a_transcript_begun_again_is_cut_where_it_restarts() -> None:
    # Both as the server's speculative passes of a bench turns request decoded them in the short window.
    assert restarted(BOSS + " Can you help me write a short") == BOSS
    assert restarted(" Can you help me write a short email to my boss? Can you help me write a short") == (
        " Can you help me write a short email to my boss?")
    assert restarted(" What time is it right now? What time is it right now?") == " What time is it right now?"


@pytest.mark.parametrize("text", [
    " I want to, I want to go home.",  # a repair inside the speech: words follow the repeat
    " Set a timer. Set a timer for ten minutes.",
    " Please, please help me.",  # fewer than three words again
    " So I said hello and then I said hello",  # the repeat is not the transcript's beginning
    BOSS,
    "",
])
def test_what_is_not_a_restart_is_left_to_the_guard(text: str) -> None:
    assert restarted(text) is None


WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=4)


@given(st.lists(WORD, min_size=3, max_size=12), st.data())
def test_a_restart_of_any_transcript_is_cut_back_to_the_words_before_it(said: list[str], data: st.DataObject) -> None:
    again = data.draw(st.integers(min_value=3, max_value=len(said)))
    text = " " + " ".join(said) + ". " + " ".join(said[:again])
    before = restarted(text)
    assert before is not None and text.startswith(before)
    # The cut is never later than the restart: at most the words said, and all that follows is their beginning.
    kept = before.replace(".", "").split()
    rest = text[len(before):].replace(".", "").split()
    assert len(kept) <= len(said) and kept == (said + said[:again])[: len(kept)]
    assert rest == kept[: len(rest)] and len(rest) >= 3


def test_a_short_window_that_began_again_answers_without_the_stock_path(
    whisper: Any, make_handler: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    class BeganAgain:
        def fits(self, samples: Any) -> bool:
            return True

        def decode(self, samples: Any, beam_size: int = 1, still_wanted: Any = None, language: Any = None,
                   readings: int = 0, hum_check: Any = None) -> Decoded:
            return Decoded(BOSS + " Can you help me write a short", 26, -0.05, False)

    def stock(*args: Any) -> Any:
        raise AssertionError("the stock 30 s path ran")

    monkeypatch.setattr("speech_to_speech.stt.faster_whisper._transcribe", stock)
    stt = make_handler(FasterWhisperSTT, whisper)
    stt._window, stt._window_built = BeganAgain(), True
    heard = stt.transcribe(np.zeros(16000, np.float32), None)
    assert (heard.text, heard.language, heard.avg_logprob) == (BOSS, "en", -0.05)  # its confidence goes along


def test_the_stock_window_setting_turns_the_short_window_off(whisper: Any) -> None:
    assert short_window(whisper, ServerSettings(stt_window_s=30).stt) is None
    assert short_window(whisper, ServerSettings(stt_window_s=0).stt) is None
    assert short_window(whisper, ServerSettings().stt) is not None


def trimmed(samples: Any) -> Any:
    bounds = voiced_bounds(samples, 16000)
    assert bounds is not None
    return samples[bounds[0]: bounds[1]]


def spoken_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def test_speech_over_the_answer_comes_with_the_decoder_s_other_readings(
    whisper: Any, spoken: Any, make_handler: Any
) -> None:
    """A probe of speech over the answer, and the final pass of the utterance it probed, give the beam's
    readings beside the transcript (the judge weighs them); a turn of its own gives none."""
    stt = make_handler(FasterWhisperSTT, whisper)
    said = np.concatenate([SILENCE, trimmed(spoken("Okay.")), SILENCE])
    (probe,) = stt.process(Utterance(said[: len(said) // 2], 0, 400, item_id="item_1", interim=True, probe=True))
    (final,) = stt.process(Utterance(said, 0, 900, item_id="item_1"))
    (other,) = stt.process(Utterance(said, 0, 900, item_id="item_2"))
    for transcript in (probe, final):
        assert 2 <= len(transcript.readings) <= 4
        texts = [text for text, _ in transcript.readings]
        logprobs = [logprob for _, logprob in transcript.readings]
        assert logprobs == sorted(logprobs, reverse=True) and all(p <= 0.0 for p in logprobs)
        assert len(set(texts)) == len(texts)  # distinct readings, not one repeated
    assert "okay" in final.text.lower() and any("okay" in text.lower() for text, _ in final.readings)
    assert other.readings == () and other.text == final.text


class FixedWindow:
    """A short window that always hears ``text`` with mean log-probability ``logprob``."""

    def __init__(self, text: str, logprob: float) -> None:
        self.text, self.logprob, self.heard = text, logprob, 0
        self.hum_checks: list[Any] = []  # what each decode was given to ask whether a hum reading is wanted

    def fits(self, samples: Any) -> bool:
        return True

    def decode(self, samples: Any, beam_size: int = 1, still_wanted: Any = None, language: Any = None,
               readings: int = 0, hum_check: Any = None) -> Decoded:
        self.heard += 1
        self.hum_checks.append(hum_check)
        return Decoded(self.text, len(self.text.split()) + 1, self.logprob, False)


@pytest.mark.parametrize(("small", "second"), [((" Pies.", -0.6), ("Pause.", -0.4)),
                                               ((" Cancel.", -0.8), ("Cancel.", -0.3))])
def test_speech_over_the_answer_its_words_left_undecided_gets_the_larger_model_s_reading(
    whisper: Any, make_handler: Any, small: tuple[str, float], second: tuple[str, float]
) -> None:
    """The end of a probed utterance whose words decide nothing (a few unsure or uncued words) is read by
    the language check's model too; its words go beside the transcript, which stays the small model's."""
    stt = make_handler(FasterWhisperSTT, whisper)
    stt._window, stt._window_built = FixedWindow(*small), True
    stt._checker_window = larger = FixedWindow(*second)
    said = np.zeros(12000, np.float32)
    (probe,) = stt.process(Utterance(said[:6000], 0, 400, item_id="item_1", interim=True, probe=True))
    assert probe.second_reading is None and larger.heard == 0  # a probe is quick: its words alone
    (final,) = stt.process(Utterance(said, 0, 700, item_id="item_1"))
    assert final.text == small[0].strip() and final.second_reading == second and larger.heard == 1
    (own,) = stt.process(Utterance(said, 0, 700, item_id="item_2"))
    assert own.second_reading is None and larger.heard == 1  # a turn of its own: not over the answer


@pytest.mark.parametrize("small", [(" Stop.", -0.2), (" Yeah.", -0.3), (" Wait, what did you say?", -0.9)])
def test_words_that_decide_by_themselves_get_no_second_reading(whisper: Any, make_handler: Any,
                                                               small: tuple[str, float]) -> None:
    stt = make_handler(FasterWhisperSTT, whisper)
    stt._window, stt._window_built = FixedWindow(*small), True
    stt._checker_window = larger = FixedWindow("Pause.", -0.4)
    said = np.zeros(12000, np.float32)
    stt.process(Utterance(said[:6000], 0, 400, item_id="item_1", interim=True, probe=True))
    (final,) = stt.process(Utterance(said, 0, 700, item_id="item_1"))
    assert final.second_reading is None and larger.heard == 0


@pytest.mark.parametrize(("small", "wanted"), [((" No.", -0.6), True), ((" Yeah.", -0.6), False)])
def test_a_hum_reading_is_wanted_only_of_speech_over_the_answer_whose_words_would_take_the_turn(
    whisper: Any, make_handler: Any, small: tuple[str, float], wanted: bool
) -> None:
    stt = make_handler(FasterWhisperSTT, whisper)
    window = FixedWindow(*small)
    stt._window, stt._window_built = window, True
    said = np.zeros(12000, np.float32)
    for utterance in (Utterance(said[:6000], 0, 400, item_id="item_1", interim=True, probe=True),
                      Utterance(said, 0, 700, item_id="item_1"), Utterance(said, 0, 700, item_id="item_2")):
        list(stt.process(utterance))  # a probe, the end of the utterance it probed, and a turn of its own
    probe, final, own = window.hum_checks
    assert probe(*small, ()) is wanted and final(*small, ()) is wanted
    assert own is None


def test_a_hum_is_scored_as_the_decoder_scores_its_own_words_and_far_below_a_sure_word(
    whisper: Any, spoken: Any
) -> None:
    """The forced scores of hum readings are on the decoder's own scale: forced along its own transcript, the
    decoder gives it the log-probability it reported; a clear "Stop." leaves every hum far behind."""
    window = short_window(whisper, ServerSettings().stt)
    assert window is not None
    said = np.concatenate([SILENCE, trimmed(spoken("Stop.")), SILENCE])
    tokenizer, prompt = window._prompt("en")
    decoded = window.decode(said, 1, None, "en")
    encoded = whisper.model.encode(ctranslate2.StorageView.from_array(window.features(said)))
    own = tokenizer.encode(decoded.text)
    scores = forced_logprobs(whisper.model, encoded, prompt, [[*own, tokenizer.eot]], window.suppress)
    assert scores is not None
    (forced,) = scores
    assert forced == pytest.approx(decoded.avg_logprob * (decoded.tokens + 1), abs=0.02)
    hums = forced_logprobs(whisper.model, encoded, prompt, [[*tokenizer.encode(h), tokenizer.eot] for h in HUMS],
                           window.suppress)
    assert hums is not None and len(hums) == len(HUMS)
    assert forced - max(hums) > HUM_GAP


def test_a_probe_keeps_words_the_short_window_doubted_with_its_doubt(whisper: Any, make_handler: Any) -> None:
    """A hum tiny.en spells as a word is always doubted; a probe of speech over the answer keeps the words and
    how unsure the decoder was (the judge weighs both), where a turn of its own goes to the stock path."""
    stt = make_handler(FasterWhisperSTT, whisper)
    stt._window, stt._window_built = FixedWindow(" Let's...", -1.15), True
    said = np.zeros(12000, np.float32)
    (probe,) = stt.process(Utterance(said[:6000], 0, 400, item_id="item_1", interim=True, probe=True))
    assert (probe.text, probe.avg_logprob) == ("Let's...", -1.15)
    (own,) = stt.process(Utterance(said, 0, 700, item_id="item_2"))
    assert own.text != "Let's..."  # silence, heard by the stock 30 s path
