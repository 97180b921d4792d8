"""bench load in parts: phases asked for, pairs formed, the summary's ratios from hand-made turns, and (on a
scripted server) the barrier that makes the two sessions of a pair start speaking together."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from speech_to_speech.bench import load
from speech_to_speech.bench.audio import speech, tone_speech
from speech_to_speech.bench.target import Target
from speech_to_speech.bench.turns import LATENCY, TurnsConfig, speak
from speech_to_speech.config import ServerSettings
from speech_to_speech.testing.server import running_server

Samples = Callable[..., list[dict[str, Any]]]  # the load_samples fixture


def test_every_phase_is_summarized_and_compared_to_alone(load_samples: Samples) -> None:
    neighbour = {"pid": 1234, "busy_share": 0.98}
    summary = load.summarize_load(load_samples(), neighbour)
    phases = summary["phases"]
    assert list(phases) == ["alone", "busy_neighbour", "two_at_once"]
    assert [phases[p]["answered"] for p in phases] == [4, 4, 4]
    assert phases["alone"][LATENCY]["p50"] == 500.0
    assert phases["busy_neighbour"][LATENCY]["p50"] == 750.0
    assert phases["two_at_once"][LATENCY]["p50"] == 675.0
    assert phases["busy_neighbour"]["neighbour"] == neighbour
    assert phases["two_at_once"]["pairs"] == [
        {"repeat": 0, "pair": 0, "requests": ["a", "b"], "slower_ms": 650.0, "start_skew_ms": 12.5},
        {"repeat": 0, "pair": 1, "requests": ["c", "d"], "slower_ms": 1000.0, "start_skew_ms": None}]
    assert phases["two_at_once"][load.SLOWER]["p50"] == 825.0  # the median of 650 and 1000
    assert summary["alone_p50_ms"] == 500.0
    assert summary["busy_neighbour_ratio"] == 1.5
    assert summary["two_at_once_ratio"] == 1.35
    assert summary["two_at_once_slowest_ratio"] == 1.65
    assert summary["two_at_once_slowest_max_ratio"] == 2.0
    assert (summary["requests"], summary["answered"], summary["all_answered"]) == (12, 12, True)


def test_a_turn_with_no_answer_fails_all_answered_and_leaves_its_pair_out_of_the_slower(
        load_samples: Samples) -> None:
    summary = load.summarize_load(load_samples(unanswered=True))
    two = summary["phases"]["two_at_once"]
    assert summary["all_answered"] is False and summary["answered"] == 11
    assert two["answered"] == 3 and two["unanswered"] == ["d (repeat 0)"]
    assert two["not_completed"] == {"cancelled: turn_detected": 1}
    assert [pair["slower_ms"] for pair in two["pairs"]] == [650.0, None]
    assert two[load.SLOWER]["n"] == 1
    assert summary["two_at_once_slowest_ratio"] == summary["two_at_once_slowest_max_ratio"] == 1.3
    assert "neighbour" not in summary["phases"]["busy_neighbour"]


def test_without_alone_there_is_nothing_to_compare_to(load_samples: Samples) -> None:
    summary = load.summarize_load([s for s in load_samples() if s["phase"] != "alone"])
    assert "alone" not in summary["phases"] and summary["alone_p50_ms"] is None
    assert summary["busy_neighbour_ratio"] is None and summary["two_at_once_slowest_ratio"] is None
    only_alone = load.summarize_load([s for s in load_samples() if s["phase"] == "alone"])
    assert list(only_alone["phases"]) == ["alone"] and only_alone["two_at_once_ratio"] is None


def test_phases_run_in_their_order_whatever_order_they_are_asked_in() -> None:
    assert load.parse_phases("two_at_once,alone") == ("alone", "two_at_once")
    assert load.parse_phases("busy_neighbour") == ("busy_neighbour",)
    for wrong in ("", "alone,crowded", " , "):
        with pytest.raises(ValueError, match="phases are"):
            load.parse_phases(wrong)


def clip(name: str) -> Any:
    return speech(name, name, np.full(2400, 0.3, np.float32), 24000)


def test_requests_are_paired_with_their_neighbour_and_an_odd_last_one_with_the_first() -> None:
    clips = [clip(name) for name in "abcde"]
    assert [(x.name, y.name) for x, y in load.pairs(clips[:4])] == [("a", "b"), ("c", "d")]
    assert [(x.name, y.name) for x, y in load.pairs(clips)] == [("a", "b"), ("c", "d"), ("e", "a")]
    assert [(x.name, y.name) for x, y in load.pairs(clips[:1])] == [("a", "a")]


def test_the_neighbour_outlives_no_possible_phase() -> None:
    clips = [clip(name) for name in "ab"]
    config = load.TurnsConfig(timeout_s=10.0, settle_s=1.0)
    limit = load.neighbour_limit_s(clips, config)
    assert limit > 2 * (load.IDLE_WAIT_S + 2 * config.timeout_s + config.settle_s)  # every wait, per turn
    assert load.neighbour_limit_s(clips, load.TurnsConfig(timeout_s=10.0, settle_s=1.0, repeat=2)) > limit


@pytest.fixture
def scripted() -> Iterator[Target]:
    settings = ServerSettings.model_validate({**dict.fromkeys(("vad", "stt", "llm", "tts"), "scripted"),
                                              "num_pipelines": 2, "min_silence_ms": 300,
                                              "scripted_tts_ms_per_char": 5.0})
    with running_server(settings) as server:
        yield Target(server.ws_url, server.http_url, None)


SAID = TurnsConfig(settle_s=0.5, timeout_s=30.0)


async def test_a_session_of_a_pair_waits_for_the_other_before_speaking(scripted: Target) -> None:
    together = asyncio.Barrier(2)

    async def late_partner() -> float:
        await asyncio.sleep(1.0)  # well past the speaker's lead silence
        arrived = time.time() * 1000.0
        await asyncio.wait_for(together.wait(), SAID.timeout_s)  # a speaker that never waits fails this
        return arrived

    sample, arrived = await asyncio.gather(speak(scripted, tone_speech(0.5), SAID, together), late_partner())
    assert sample["answered"] and "error" not in sample
    assert sample["speech_sent_at_ms"] >= arrived  # its first word left after the partner was there


async def test_a_partner_that_fails_does_not_leave_the_other_waiting(scripted: Target) -> None:
    nowhere = Target("ws://127.0.0.1:1/v1/realtime", scripted.http_url, None)  # nothing listens on port 1
    together = asyncio.Barrier(2)
    kept, failed = await asyncio.gather(speak(scripted, tone_speech(0.5), SAID, together),
                                        speak(nowhere, tone_speech(0.5), SAID, together))
    assert not failed["answered"] and failed["error"]
    assert not kept["answered"] and kept["error"].startswith("not said: a session meant to speak at the same moment")
    assert "speech_sent_at_ms" not in kept
