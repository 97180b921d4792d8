"""The echo rig's speaker says what it played as the packaged client does: audio, not time since an item began."""

from __future__ import annotations

import numpy as np

from speech_to_speech.testing.echo_rig import Speaker

RATE = 16000
ITEM = ("resp_1", "item_1")


def _ms(ms: int) -> int:
    return RATE * ms // 1000


def _audio(ms: int) -> np.ndarray:
    return np.full(_ms(ms), 0.1, np.float32)


def _played(speaker: Speaker, at_ms: int) -> int:
    [(_, _, played)] = speaker.played_ms(_ms(at_ms))
    return played


def test_a_speaker_that_ran_dry_does_not_count_the_silence_as_the_item_played() -> None:
    speaker = Speaker(RATE)
    speaker.queue(_audio(100), 0, ITEM)
    speaker.queue(_audio(100), _ms(300), ITEM)  # the next piece came 200 ms after the first had played out
    assert _played(speaker, 250) == 100
    assert _played(speaker, 350) == 150
    assert _played(speaker, 900) == 200
    assert speaker.timeline[_ms(150)] == 0.0 and speaker.timeline[_ms(350)] > 0.0


def test_pieces_that_arrive_in_time_play_on_as_one_run() -> None:
    speaker = Speaker(RATE)
    speaker.queue(_audio(100), 0, ITEM)
    speaker.queue(_audio(100), _ms(50), ITEM)  # queued behind the first
    assert speaker.items[ITEM] == [(0, _ms(200))]
    assert _played(speaker, 150) == 150


def test_a_stopped_speaker_has_played_only_what_came_before_the_stop() -> None:
    speaker = Speaker(RATE)
    speaker.queue(_audio(100), 0, ITEM)
    speaker.queue(_audio(100), _ms(300), ITEM)
    speaker.stop(_ms(320))
    assert _played(speaker, 900) == 120
    assert speaker.played_ms(0) == [("resp_1", "item_1", 0)]
    assert not speaker.timeline[_ms(320):].any()
