"""`speech-to-speech bench conversation` end to end against a scripted server: one session per conversation,
the user hearing each answer out, every figure taken from the events the server sent."""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from speech_to_speech import cli
from speech_to_speech.bench import audio, report
from speech_to_speech.bench.turns import LATENCY
from speech_to_speech.testing.client_audio import tone

SCRIPT = {"voiced_s": [0.3, 5.0], "conversations": [{"name": "sam", "turns": [
    {"kind": "fact", "text": "My name is Sam and I live in Oslo."},
    {"kind": "everyday", "text": "What is two plus two?", "any": [4]},
    {"kind": "everyday", "text": "What is the capital of Japan?", "any": ["Tokyo"]},
    {"kind": "recall", "text": "What is my name?", "of_turn": 1, "any": ["Sam"], "all": ["Oslo"]},
]}]}
TEXTS = [turn["text"] for turn in SCRIPT["conversations"][0]["turns"]]
# Right, then wrong, then a reply that repeats the whole history the LLM was given: right only if the
# server kept turn 1 in it.
REPLIES = ["Nice to meet you.", "Two plus two is 4.", "The capital of Japan is Paris.", "You told me: {history}"]
GAP_S = 0.2


def tones(texts: list[str], rate: int) -> list[audio.Samples]:
    """Stands in for the voice: a tone per text is speech to the scripted VAD."""
    return [tone(0.5, rate) for _ in texts]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of the bench, shared by the tests below: the folder holding its JSON."""
    here = tmp_path_factory.mktemp("conversation")
    script = here / "conversations.json"
    script.write_text(json.dumps(SCRIPT))
    argv = ["bench", "conversation", "--server", "in-process", "--vad", "scripted", "--stt", "scripted", "--llm",
            "scripted", "--tts", "scripted", "--min_silence_ms", "300", "--scripted_tts_ms_per_char", "10",
            "--scripted_transcripts", *TEXTS, "--scripted_replies", *REPLIES, "--corpus", str(script),
            "--warmup", "0", "--gap-s", str(GAP_S), "--settle-s", "0.5", "--output", str(here / "conversation.json")]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(audio, "synthesize", tones)
        patch.setenv("SPEECH_TO_SPEECH_CACHE", str(here / "cache"))
        assert cli.main(argv) == 0
    return here


@pytest.fixture
def result(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "conversation.json").read_text())
    return loaded


def test_every_turn_is_heard_answered_and_scored_from_the_events(result: dict[str, Any]) -> None:
    assert result["benchmark"] == "conversation"
    assert result["environment"]["server"]["pipeline"]["llm"] == "scripted"
    samples = result["samples"]
    assert [(s["conversation"], s["turn"], s["kind"]) for s in samples] == [
        ("sam", 1, "fact"), ("sam", 2, "everyday"), ("sam", 3, "everyday"), ("sam", 4, "recall")]
    assert [s["heard"] for s in samples] == [[text] for text in TEXTS]
    assert [s["reply"] for s in samples[:3]] == REPLIES[:3]
    assert "user: My name is Sam and I live in Oslo." in samples[3]["reply"]  # one session: the history kept
    assert [s["right"] for s in samples] == [None, True, False, True]
    assert all(s["answered"] and not s["double"] and "error" not in s for s in samples)
    assert samples[3]["of_turn"] == 1
    config = result["config"]
    assert [(c["name"], c["turns"]) for c in config["conversations"]] == [("sam", 4)]


def test_the_user_hears_each_answer_out_before_speaking_again(result: dict[str, Any]) -> None:
    samples = result["samples"]
    for before, after in itertools.pairwise(samples):
        assert after["speech_sent_at_ms"] >= before["answer_played_out_at_ms"] + GAP_S * 1000 - 25  # a chunk late
    for sample in samples:
        assert sample[LATENCY] > 0
        assert sample["stage_marks_ms"]["first_audio_sent"] <= sample[LATENCY] + 1  # the server sent it first
        assert {"vad_ms", "stt_ms", "llm_first_token_ms", "tts_first_audio_ms"} <= set(sample)


def test_prompt_tokens_read_grow_with_the_history_and_nothing_is_cached(result: dict[str, Any]) -> None:
    samples = result["samples"]
    read = [s["prompt_tokens_read"] for s in samples]
    assert [s["cached_tokens"] for s in samples] == [0, 0, 0, 0]  # the scripted LLM keeps no cache
    assert read == [s["input_tokens"] for s in samples]
    assert all(later > earlier for earlier, later in itertools.pairwise(read))  # every turn adds words
    assert result["summary"]["prompt_tokens_read"]["p50"] == statistics.median(read)


def test_the_summary_counts_recall_accuracy_and_the_slowdown(result: dict[str, Any]) -> None:
    summary, samples = result["summary"], result["samples"]
    assert (summary["conversations"], summary["turns"], summary["answered"], summary["errors"]) == (1, 4, 4, 0)
    assert summary["recall"] == {"right": 1, "n": 1, "rate": 1.0} and summary["recall_rate"] == 1.0
    assert summary["scored"] == {"right": 2, "n": 3, "rate": 0.667} and summary["accuracy"] == 0.667
    assert summary["by_kind"] == {"everyday": {"right": 1, "n": 2, "rate": 0.5},
                                  "recall": {"right": 1, "n": 1, "rate": 1.0}}
    latencies = [s[LATENCY] for s in samples]
    early, late = summary["turns_2_to_6_ms"], summary["last_five_turns_ms"]
    assert (early["n"], late["n"]) == (3, 4)
    assert early["p50"] == round(statistics.median(latencies[1:]), 2)
    assert late["p50"] == round(statistics.median(latencies), 2)
    assert summary["last_five_to_turns_2_to_6"] == round(late["p50"] / early["p50"], 3)
    assert summary["per_conversation"]["sam"]["accuracy"] == 0.667


def test_the_report_has_a_conversation_row(folder: Path) -> None:
    table = report.markdown(report.load_results(folder))
    assert "| **conversation** | end of speech → first audio delta |" in table
    assert "| | facts of earlier turns recalled | 1 of 1 (100%) | | |" in table
    assert "| | right answers of the scored turns | 2 of 3 (67%; everyday 1/2, recall 1/1) | | |" in table
    assert "prompt tokens the LLM read at each turn" in table
