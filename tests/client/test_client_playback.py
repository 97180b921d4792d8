"""Playback: jitter buffer, resampling, clearing and the per-item clock behind truncation."""

from __future__ import annotations

import numpy as np

from speech_to_speech.client.playback import Cut, Playback
from speech_to_speech.testing.client_audio import tone

RATE = 24000


def pcm(seconds: float, rate: int = RATE) -> np.ndarray:
    return (tone(seconds, rate) * 32767).astype(np.int16)


def drain(playback: Playback, block: int = 480) -> int:
    played = 0
    while True:
        _, filled = playback.read(block)
        if not filled:
            return played
        played += filled


def test_a_response_waits_for_its_jitter_buffer_then_plays() -> None:
    playback = Playback(RATE, RATE, jitter_ms=100)
    playback.feed("r1", "i1", pcm(0.05))
    assert playback.read(480)[1] == 0  # 50 ms buffered: not yet
    playback.feed("r1", "i1", pcm(0.05))
    audio, filled = playback.read(480)
    assert filled == 480 and np.abs(audio).max() > 0.1


def test_a_short_reply_plays_once_all_of_it_arrived() -> None:
    playback = Playback(RATE, RATE, jitter_ms=500)
    playback.feed("r1", "i1", pcm(0.1))
    assert playback.read(480)[1] == 0
    playback.audio_done("i1")
    assert drain(playback) == int(0.1 * RATE)


def test_the_server_rate_is_resampled_to_the_device_rate() -> None:
    playback = Playback(16000, 48000, jitter_ms=0)
    for _ in range(10):
        playback.feed("r1", "i1", pcm(0.1, 16000))
    playback.response_done("r1")
    assert abs(drain(playback) - 48000) <= 48  # one second in, one second out (within 1 ms)


def test_clear_cuts_each_item_at_what_was_played() -> None:
    playback = Playback(RATE, RATE, jitter_ms=0)
    playback.feed("r1", "i1", pcm(1.0))
    playback.read(int(0.3 * RATE))
    assert playback.clear("r1") == [Cut("i1", 300)]
    assert playback.read(480)[1] == 0
    playback.feed("r1", "i1", pcm(0.2))  # late audio of a cut response never plays
    assert playback.read(480)[1] == 0 and not playback.speaking


def test_clearing_one_response_keeps_the_next() -> None:
    playback = Playback(RATE, RATE, jitter_ms=0)
    playback.feed("r1", "i1", pcm(0.2))
    playback.feed("r2", "i2", pcm(0.2))
    playback.response_done("r2")
    assert playback.clear("r1") == [Cut("i1", 0)]
    assert drain(playback) == int(0.2 * RATE)


def test_a_fully_played_item_needs_no_cut() -> None:
    playback = Playback(RATE, RATE, jitter_ms=0)
    playback.feed("r1", "i1", pcm(0.1))
    playback.response_done("r1")
    drain(playback)
    assert playback.clear() == []


def test_one_read_never_spans_two_responses() -> None:
    playback = Playback(RATE, RATE, jitter_ms=0)
    playback.feed("r1", "i1", pcm(0.01))
    playback.feed("r2", "i2", pcm(0.01))
    playback.response_done("r1")
    playback.response_done("r2")
    assert playback.read(4800)[1] == 240 and playback.last_response_id == "r1"
    assert playback.read(4800)[1] == 240 and playback.last_response_id == "r2"


def test_speaking_lasts_until_the_reply_is_played_out() -> None:
    playback = Playback(RATE, RATE, jitter_ms=0)
    assert not playback.speaking
    playback.feed("r1", "i1", pcm(0.05))
    assert playback.speaking
    drain(playback)
    assert playback.speaking  # more of the reply may still arrive
    playback.response_done("r1")
    assert not playback.speaking
